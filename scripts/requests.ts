/**
 * Counts the HTTP requests Baton's clients make in this process, by undici's diagnostics channels
 * (every client request goes through undici: src/client/http.ts), and times each up to its answer's
 * headers, by path.
 */
import diagnostics from 'node:diagnostics_channel';

export interface RequestLog {
  /** Requests made since the log began. */
  readonly count: number;
  /** Milliseconds to the answer's headers, by path under /rest/v1/. */
  readonly timings: Map<string, number[]>;
}

export function logRequests(): RequestLog {
  const log = { count: 0, timings: new Map<string, number[]>() };
  const startedAt = new WeakMap<object, number>();
  diagnostics.subscribe('undici:request:create', (message) => {
    log.count += 1;
    startedAt.set((message as { request: object }).request, performance.now());
  });
  diagnostics.subscribe('undici:request:headers', (message) => {
    const { request } = message as { request: { path: string } };
    const name = request.path.split('?')[0]!.replace(/^\/rest\/v1\//, '');
    if (!log.timings.has(name)) log.timings.set(name, []);
    log.timings.get(name)!.push(performance.now() - (startedAt.get(request) ?? performance.now()));
  });
  return log;
}
