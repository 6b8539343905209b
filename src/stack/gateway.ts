/**
 * The API gateway: serves PostgREST under /rest/v1, as a Supabase project's gateway does, so that
 * supabase-js works unchanged. Like Supabase's, it refuses requests without a known API key and passes
 * the caller's Authorization header through (falling back to the API key itself).
 *
 * Nothing a caller sends may tie up the stack: CORS preflights are answered here and never reach
 * PostgREST; headers, bodies and time are bounded; and upstream work stops when the caller goes away.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const REST_PREFIX = '/rest/v1';

export const gatewayLimits = Object.freeze({
  /** Request line and headers: long filters (e.g. `in.(…)` of a thousand ids) fit. */
  requestHeaderBytes: 64 * 1024,
  /** PostgREST echoes the query in Content-Location, so its headers may be as long as the request's. */
  upstreamHeaderBytes: 256 * 1024,
  /** A 1 MiB artifact travels hex-encoded inside JSON; this leaves room for it and more. */
  bodyBytes: 8 * 1024 * 1024,
  /** Time to send the whole request. */
  requestSeconds: 60,
  /** Time PostgREST may take to answer. */
  upstreamSeconds: 120,
});

const corsHeaders = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, POST, PATCH, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'authorization, apikey, content-type, prefer, range, accept-profile, content-profile, x-client-info',
  'access-control-max-age': '86400',
};

export interface GatewayHandle {
  port: number;
  stop(): Promise<void>;
}

function reply(res: http.ServerResponse, status: number, body: Record<string, string>): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify(body));
}

export async function startGateway(
  { port, upstreamPort, apiKeys }: { port: number; upstreamPort: number; apiKeys: string[] },
): Promise<GatewayHandle> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const known = new Set(apiKeys);

  const server = http.createServer({
    maxHeaderSize: gatewayLimits.requestHeaderBytes,
    requestTimeout: gatewayLimits.requestSeconds * 1000,
    headersTimeout: Math.min(20, gatewayLimits.requestSeconds) * 1000,
  }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname === '/health') return reply(res, 200, { status: 'ok' });
    if (url.pathname !== REST_PREFIX && !url.pathname.startsWith(`${REST_PREFIX}/`)) {
      return reply(res, 404, { message: `no route for ${url.pathname}; the REST API is under ${REST_PREFIX}/` });
    }
    // A CORS preflight carries no key; it is answered here and never costs PostgREST anything.
    if (req.method === 'OPTIONS') {
      res.writeHead(204, corsHeaders);
      return void res.end();
    }

    const headers = { ...req.headers };
    const apiKey = (headers.apikey as string | undefined) ?? url.searchParams.get('apikey') ?? undefined;
    if (!apiKey) return reply(res, 401, { message: 'No API key found in request', hint: 'Send the anon or service-role key as the apikey header.' });
    if (!known.has(apiKey)) return reply(res, 401, { message: 'Invalid API key', hint: 'Use the keys printed by baton stack env.' });
    headers.authorization ??= `Bearer ${apiKey}`;
    url.searchParams.delete('apikey');
    if (Number(headers['content-length'] ?? 0) > gatewayLimits.bodyBytes) {
      return reply(res, 413, { message: `the request body is larger than ${gatewayLimits.bodyBytes} bytes`, hint: 'Store large content elsewhere and send a link (an artifact uri).' });
    }

    const upstream = http.request({
      host: '127.0.0.1',
      port: upstreamPort,
      method: req.method,
      path: (url.pathname.slice(REST_PREFIX.length) || '/') + url.search,
      headers,
      agent,
      maxHeaderSize: gatewayLimits.upstreamHeaderBytes,
      timeout: gatewayLimits.upstreamSeconds * 1000,
    }, (upstreamRes) => {
      const { 'content-location': echoed, ...passed } = upstreamRes.headers;
      // PostgREST echoes the whole query in Content-Location; past Node's 16 KiB header limit that would
      // make a long but valid query unreadable for the caller, so a long echo is left out.
      const location = echoed && echoed.length <= 4096 ? { 'content-location': echoed } : {};
      res.writeHead(upstreamRes.statusCode ?? 502, { ...passed, ...location, 'access-control-allow-origin': '*' });
      upstreamRes.pipe(res);
    });
    upstream.on('timeout', () => {
      reply(res, 504, { message: `PostgREST did not answer within ${gatewayLimits.upstreamSeconds} s` });
      upstream.destroy();
    });
    upstream.on('error', (err) => reply(res, 502, { message: `PostgREST is not answering: ${err.message}` }));
    // A caller that goes away takes its upstream request with it.
    res.on('close', () => { if (!res.writableFinished) upstream.destroy(); });

    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > gatewayLimits.bodyBytes) {
        req.unpipe(upstream);
        upstream.destroy();
        reply(res, 413, { message: `the request body is larger than ${gatewayLimits.bodyBytes} bytes`, hint: 'Store large content elsewhere and send a link (an artifact uri).' });
        req.destroy();
      }
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
