/**
 * The API gateway: serves PostgREST under /rest/v1, as a Supabase project's gateway does, so that
 * supabase-js works unchanged. Like Supabase's, it refuses requests without a known API key and passes
 * the caller's Authorization header through (falling back to the API key itself).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const REST_PREFIX = '/rest/v1';

export interface GatewayHandle {
  port: number;
  stop(): Promise<void>;
}

function reply(res: http.ServerResponse, status: number, body: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startGateway(
  { port, upstreamPort, apiKeys }: { port: number; upstreamPort: number; apiKeys: string[] },
): Promise<GatewayHandle> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const known = new Set(apiKeys);

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname === '/health') return reply(res, 200, { status: 'ok' });
    if (url.pathname !== REST_PREFIX && !url.pathname.startsWith(`${REST_PREFIX}/`)) {
      return reply(res, 404, { message: `no route for ${url.pathname}; the REST API is under ${REST_PREFIX}/` });
    }

    const headers = { ...req.headers };
    if (req.method !== 'OPTIONS') {
      const apiKey = (headers.apikey as string | undefined) ?? url.searchParams.get('apikey') ?? undefined;
      if (!apiKey) return reply(res, 401, { message: 'No API key found in request', hint: 'Send the anon or service-role key as the apikey header.' });
      if (!known.has(apiKey)) return reply(res, 401, { message: 'Invalid API key', hint: 'Use the keys printed by baton stack env.' });
      headers.authorization ??= `Bearer ${apiKey}`;
    }
    url.searchParams.delete('apikey');

    const upstream = http.request({
      host: '127.0.0.1',
      port: upstreamPort,
      method: req.method,
      path: (url.pathname.slice(REST_PREFIX.length) || '/') + url.search,
      headers,
      agent,
    }, (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) reply(res, 502, { message: `PostgREST is not answering: ${err.message}` });
      else res.destroy(err);
    });
    req.pipe(upstream);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
      agent.destroy();
    }),
  };
}
