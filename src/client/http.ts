/**
 * The fetch Baton's clients hand to supabase-js: undici's request API behind fetch's signature. Node's
 * own fetch (undici's WHATWG layer: streams, spec-checked headers, a body mixin per response) cost
 * 2.0-2.9 ms of CPU per request on a 2-core VM, and request 0.8-1.1 ms, for the same call through the
 * same keep-alive pool; a daemon makes one request per batch of tasks, so this is most of its own CPU.
 *
 * It speaks to a Supabase API (or Baton's gateway) only: no redirects, no cookies, no caching, which
 * supabase-js's REST calls do not use. A failure to connect is reported as fetch reports it, a TypeError
 * "fetch failed" whose cause says why, so supabase-js and Baton word it as they always have. A one-shot
 * CLI command sends with Node's own HTTP client instead (transport.ts), by the same deadlines and with
 * the same failures.
 */
import { request as http } from 'node:http';
import { request as https } from 'node:https';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ending, isUntraced, tracer, traceHeaders, tracing } from '../telemetry/tracing.js';
import { transport } from './transport.js';

/** undici's pool (pool.ts), loaded with the first pooled request. */
let undici: typeof import('./pool.js') | undefined;
const pooled = async () => (undici ??= await import('./pool.js'));

/**
 * How long a request may wait for its answer, in ms, before it counts as lost: the connection is
 * dropped (undici replaces it) and the caller gets the "could not reach" of an unreachable API, whose
 * call may or may not have been decided (a daemon then retries its outcome with the claim token, and
 * looks for a claim whose answer it never got). A connection that died without a word (no FIN, no RST)
 * would otherwise hold a request for undici's default of five minutes. A daemon's own calls have
 * bounds it can afford: a heartbeat, a claim or a report that hangs is tried again well within a lease.
 */
export const requestDeadlines = Object.freeze({ heartbeat: 5_000, claim: 5_000, report: 5_000, upload: 60_000, other: 10_000 });

const deadlineOf: Record<string, number> = {
  sweep_tasks: requestDeadlines.heartbeat,
  attach_artifact: requestDeadlines.upload,
  send_heartbeat: requestDeadlines.heartbeat,
  check_claims: requestDeadlines.heartbeat,
  begin_incarnation: requestDeadlines.claim,
  claim_next_tasks: requestDeadlines.claim,
  claim_task: requestDeadlines.claim,
  report_and_claim: requestDeadlines.claim,
  report_outcomes: requestDeadlines.report,
  complete_task: requestDeadlines.report,
  fail_task: requestDeadlines.report,
  release_task: requestDeadlines.report,
  decline_task: requestDeadlines.report,
};

/** The deadline of a request to `url`: its RPC's, or the one for everything else. */
function deadlineFor(url: string): number {
  const rpc = /\/rest\/v1\/rpc\/([a-z_]+)/.exec(url)?.[1];
  return (rpc && deadlineOf[rpc]) || requestDeadlines.other;
}

const requestErrorListeners = new Set<() => void>();
/** Calls `listener` for each request that fails: unreachable, or answered 5xx (a daemon's metrics count them). */
export function onRequestError(listener: () => void): () => void {
  requestErrorListeners.add(listener);
  return () => requestErrorListeners.delete(listener);
}

/** Statuses whose response has no body (a Response with one refuses to be made). */
const bodiless = new Set([101, 103, 204, 205, 304]);

/** Headers in any of fetch's forms, as one object. */
export function headersOf(init: HeadersInit | undefined): Record<string, string> {
  if (!init) return {};
  if (init instanceof Headers) return Object.fromEntries(init);
  if (Array.isArray(init)) return Object.fromEntries(init);
  return init as Record<string, string>;
}

/** The caller's own abort (undici's RequestAbortedError is an AbortError too), not a failure to reach. */
function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

const failed = () => { for (const listener of requestErrorListeners) listener(); };

/** When this process last had an answer from the API (a status below 500), on its clock. */
let lastAnswerAt = 0;
const answered = (status: number) => { if (status < 500) lastAnswerAt = Date.now(); };

/**
 * Whether the API answered some call of this process within the last `ms`: a call that then got no
 * answer within its deadline met an API that is slow (busy), not away.
 */
export function answeredWithin(ms: number): boolean {
  return Date.now() - lastAnswerAt < ms;
}

/** Why a request failed when it got no answer within its deadline (the cause of its "fetch failed"). */
export class LateAnswerError extends Error {
  constructor(readonly deadlineMs: number, options: ErrorOptions) {
    super(`no answer within ${deadlineMs / 1000} s`, options);
    this.name = 'LateAnswerError';
  }
}

/** The calls that hand work off, whose context the tasks they make record. */
const handoffCalls = new Set(['rpc/handoff_task', 'rpc/handoff_tasks', 'rpc/fan_out']);

/**
 * A hand-off's span, as OpenTelemetry's messaging conventions have a send: a producer span named
 * `send {destination}` (the agent, else the capabilities; just `send` for a batch), since the context
 * the tasks record is where their processing hangs.
 */
function handoffSpan(what: string, body: unknown): { name: string; attributes: Record<string, string> } | undefined {
  if (!handoffCalls.has(what)) return undefined;
  let destination: string | undefined;
  if (what === 'rpc/handoff_task' && typeof body === 'string') {
    try {
      const args = JSON.parse(body) as { p_to_agent?: unknown; p_required_capabilities?: unknown };
      destination = typeof args.p_to_agent === 'string' ? args.p_to_agent
        : Array.isArray(args.p_required_capabilities) && args.p_required_capabilities.length ? args.p_required_capabilities.join(',') : 'anyone';
    } catch { /* a body that is not JSON: PostgREST will say so */ }
  }
  return {
    name: destination ? `send ${destination}` : 'send',
    attributes: {
      'messaging.system': 'baton', 'messaging.operation.name': 'send', 'messaging.operation.type': 'send', 'baton.rpc': what.slice(4),
      ...(destination ? { 'messaging.destination.name': destination } : {}),
    },
  };
}

/**
 * With tracing on, each request is a client span ("baton rpc/claim_task", "baton GET task_handoffs")
 * whose context goes out as traceparent: the database records it on the tasks a hand-off makes.
 */
export const batonFetch: typeof fetch = (input, init = {}) => {
  if (!tracing() || isUntraced()) return send(input, init);
  const url = new URL(String(input));
  const what = url.pathname.replace(/^\/rest\/v1\//, '');
  const http = { 'http.request.method': init.method ?? 'GET', 'url.path': url.pathname, 'server.address': url.hostname };
  const sending = handoffSpan(what, init.body);
  const [name, kind, attributes] = sending
    ? [sending.name, SpanKind.PRODUCER, { ...http, ...sending.attributes }]
    : [what.startsWith('rpc/') ? `baton ${what}` : `baton ${init.method ?? 'GET'} ${what}`, SpanKind.CLIENT, http];
  return tracer.startActiveSpan(name, { kind, attributes }, (span) => ending(span, async () => {
    const answer = await send(input, { ...init, headers: { ...headersOf(init.headers), ...traceHeaders() } });
    span.setAttribute('http.response.status_code', answer.status);
    if (answer.status >= 400) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', String(answer.status));
    }
    return answer;
  }));
};

const send: typeof fetch = async (input, init = {}) => {
  if (input instanceof Request) throw new TypeError('batonFetch takes a URL and options, not a Request');
  const method = init.method ?? 'GET';
  const body = init.body;
  if (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
    throw new TypeError('batonFetch sends a string or bytes as the body');
  }
  const deadline = deadlineFor(String(input));
  if (transport.oneShot) return sendOnce(String(input), { method, headers: headersOf(init.headers), body: body ?? null, signal: init.signal ?? null }, deadline);
  const { request, dispatcher } = undici ?? await pooled();
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await request(input, {
      method: method as never,
      headers: headersOf(init.headers),
      body: body ?? null,
      signal: init.signal ?? undefined,
      dispatcher,
      headersTimeout: deadline,
      bodyTimeout: deadline,
    });
  } catch (err) {
    if (isAbort(err)) throw err;
    failed();
    const late = ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'].includes((err as { code?: string }).code ?? '');
    throw unreached(err, late ? deadline : undefined);
  }
  if (answer.statusCode >= 500) failed();
  answered(answer.statusCode);
  const empty = bodiless.has(answer.statusCode) || method === 'HEAD';
  const content = empty ? (await answer.body.dump(), null) : new Uint8Array(await answer.body.arrayBuffer());
  return new BufferedResponse(content, { status: answer.statusCode, headers: headerPairs(answer.headers) });
};

/** Headers as undici and node:http give them (a list for a repeated one), as pairs: the Response makes its Headers from them once. */
function headerPairs(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const one of value) pairs.push([name, one]);
    else if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

/**
 * One request with Node's own HTTP client, for a one-shot command: the deadline ends it as the pool's
 * timeouts do, as a failure to reach (not as the caller's abort), with the answer read whole within it.
 * Not Node's fetch: a process that used it spends about 130 ms more (npm run bench:cli), most of it at
 * exit, waiting for V8 to finish compiling the WebAssembly HTTP parser fetch brings, the rest loading
 * it. Idle connections are kept for the command's next request and do not hold it open.
 */
async function sendOnce(url: string, init: { method: string; headers: Record<string, string>; body: string | Uint8Array | null; signal: AbortSignal | null }, deadline: number): Promise<Response> {
  const timeout = AbortSignal.timeout(deadline);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const send = url.startsWith('https:') ? https : http;
  try {
    const answer = await new Promise<Response>((resolve, reject) => {
      const request = send(url, { method: init.method, headers: init.headers, signal }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const empty = bodiless.has(status) || init.method === 'HEAD';
          resolve(new BufferedResponse(empty ? null : new Uint8Array(Buffer.concat(chunks)), { status, statusText: response.statusMessage ?? '', headers: headerPairs(response.headers) }));
        });
      });
      request.on('error', reject);
      request.end(init.body ?? undefined);
    });
    if (answer.status >= 500) failed();
    answered(answer.status);
    return answer;
  } catch (err) {
    // The caller's own abort stays one; the deadline's is a failure to reach, as anything else is.
    if (init.signal?.aborted && !timeout.aborted) throw err;
    failed();
    throw unreached(err, timeout.aborted ? deadline : undefined);
  }
}

/** A failure to reach, as fetch reports one (a TypeError "fetch failed" whose cause says why); one past its deadline says how long it waited. */
function unreached(err: unknown, lateAfterMs?: number): TypeError {
  return new TypeError('fetch failed', { cause: lateAfterMs === undefined ? err : new LateAnswerError(lateAfterMs, { cause: err }) });
}

/**
 * A Response whose body is already in memory, read without a stream. A Response made from bytes wraps
 * them in a ReadableStream that text() then reads back, and the streams' garbage with it: 0.29-0.30 ms
 * of the client's CPU per single hand-off, against 0.24-0.25 this way. The stream is made only for a
 * caller that asks for the body as one.
 */
class BufferedResponse extends Response {
  #content: Uint8Array<ArrayBuffer> | null;
  #stream: ReadableStream<Uint8Array<ArrayBuffer>> | null = null;
  #used = false;

  constructor(content: Uint8Array<ArrayBuffer> | null, init: ResponseInit) {
    super(null, init);
    this.#content = content;
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
    if (this.#content && !this.#stream) this.#stream = new Blob([this.#content]).stream() as ReadableStream<Uint8Array<ArrayBuffer>>;
    return this.#stream;
  }

  override get bodyUsed(): boolean {
    return this.#used || (this.#stream?.locked ?? false);
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.#read())?.buffer ?? new ArrayBuffer(0);
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async blob(): Promise<Blob> {
    return new Blob([await this.arrayBuffer()], { type: this.headers.get('content-type') ?? '' });
  }

  override async text(): Promise<string> {
    const content = await this.#read();
    return content ? Buffer.from(content.buffer).toString('utf8') : '';
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  override clone(): Response {
    if (this.bodyUsed || this.#stream) throw new TypeError('Response.clone: the body has already been used or handed out as a stream');
    return new BufferedResponse(this.#content && new Uint8Array(this.#content), { status: this.status, statusText: this.statusText, headers: this.headers });
  }

  /** The content, once, as with any Response; through the stream if a caller took it. */
  async #read(): Promise<Uint8Array<ArrayBuffer> | null> {
    if (this.bodyUsed) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    if (this.#stream) return new Uint8Array(await new Response(this.#stream).arrayBuffer());
    return this.#content;
  }
}
