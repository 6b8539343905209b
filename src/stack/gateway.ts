/**
 * The API gateway: serves PostgREST under /rest/v1, as a Supabase project's gateway does, so that
 * supabase-js works unchanged. Like Supabase's, it refuses requests without a known API key. A legacy
 * key is itself a JWT and stands in for a missing Authorization header; an opaque publishable or secret
 * key stands for the anon or service role, which the gateway passes on as a short-lived token of its own.
 * A caller's own token goes through to PostgREST, which verifies it against the project's JWKS; the
 * gateway first refuses one whose algorithm or key id the project does not have. The public keys are
 * served at /auth/v1/.well-known/jwks.json.
 *
 * Nothing a caller sends may tie up the stack: CORS preflights are answered here and never reach
 * PostgREST; headers, bodies and time are bounded; and upstream work stops when the caller goes away.
 */
import http from 'node:http';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { decodeJwt, type JWK } from 'jose';
import { refuseTokenHeader, type AcceptedTokens } from '../tokens.js';
import { REALTIME_PATH, type RealtimeHandle } from './realtime.js';

/** Where the gateway serves the stack's metrics: its requests, and what Realtime carries against its quotas (the secret key only). */
export const METRICS_PATH = '/metrics';
import { Turns } from './turns.js';

const REST_PREFIX = '/rest/v1';
const JWKS_PATH = '/auth/v1/.well-known/jwks.json';
/** How long the token behind an opaque key lives, and how long before its end a new one is made. */
const ROLE_TOKEN_SECONDS = 3600;
const ROLE_TOKEN_RENEW_SECONDS = 600;

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
  /**
   * Requests PostgREST works on at once; the others wait their turn here, first come, first served.
   * More at once only take turns on the cores: on 2 cores, 32 single hand-offs in flight cost 0.3 ms
   * more Postgres CPU each with PostgREST's 20 connections busy than with 8 (docs/benchmarks.md).
   */
  upstreamAtOnce: Math.max(4, 4 * os.availableParallelism()),
  /**
   * A request PostgREST has not answered within this long stops counting, and the next one goes: it is
   * taken to wait on a lock, not to compute. Long enough that a request merely slowed by busy cores keeps
   * its turn: at 50 ms, 32 single hand-offs in flight on 2 cores had 13-15 of PostgREST's connections
   * working at once instead of 8, and cost 0.1 ms more Postgres CPU each (docs/benchmarks.md).
   */
  upstreamSlowMs: 250,
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

export interface GatewayKeys {
  /** Legacy anon and service-role keys: JWTs, passed on as they are. */
  legacy: string[];
  /** Opaque keys and the role each stands for. */
  opaque: Record<string, 'anon' | 'service_role'>;
  /** Mints the token the gateway sends for a role behind an opaque key. */
  mintRoleToken(role: 'anon' | 'service_role', lifetimeSeconds: number): Promise<string>;
  /** The public signing keys: a token signed with ES256 must name one of them. */
  jwks: JWK[];
  /** Whether HS256 tokens (the legacy JWT secret) are accepted. */
  legacySecret: boolean;
}

export async function startGateway(
  { host = '127.0.0.1', port, upstreamPort, keys, realtime }: { host?: string; port: number; upstreamPort: number; keys: GatewayKeys; realtime?: RealtimeHandle },
): Promise<GatewayHandle> {
  const gateway = new Gateway(upstreamPort, keys, realtime);
  return gateway.listen(host, port);
}

type Role = 'anon' | 'service_role';

class Gateway {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly turns = new Turns(gatewayLimits.upstreamAtOnce, gatewayLimits.upstreamSlowMs);
  private readonly legacy: Set<string>;
  private readonly accepted: AcceptedTokens;
  private readonly jwksBody: string;
  private readonly roleTokens = new Map<string, { token: Promise<string>; renewAt: number }>();
  private readonly server: http.Server;
  /** HTTP requests taken since it started, for the metrics. */
  private requests = 0;
  /** Upgraded sockets leave the HTTP server's books, so they are kept here to close with the gateway. */
  private readonly upgraded = new Set<Duplex>();

  constructor(private readonly upstreamPort: number, private readonly keys: GatewayKeys, private readonly realtime?: RealtimeHandle) {
    this.legacy = new Set(keys.legacy);
    this.accepted = { kids: new Set(keys.jwks.map((k) => k.kid)), legacySecret: keys.legacySecret };
    this.jwksBody = JSON.stringify({ keys: keys.jwks });
    this.server = http.createServer({
      maxHeaderSize: gatewayLimits.requestHeaderBytes,
      requestTimeout: gatewayLimits.requestSeconds * 1000,
      headersTimeout: Math.min(20, gatewayLimits.requestSeconds) * 1000,
    }, (req, res) => this.request(req, res));
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
  }

  async listen(host: string, port: number): Promise<GatewayHandle> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    return {
      port: (this.server.address() as AddressInfo).port,
      stop: () => new Promise<void>((resolve) => {
        for (const socket of this.upgraded) socket.destroy();
        this.server.closeAllConnections();
        this.server.close(() => resolve());
        this.agent.destroy();
      }),
    };
  }

  private request(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname === '/health') return reply(res, 200, { status: 'ok' });
    if (url.pathname === METRICS_PATH) return this.metrics(req, res);
    this.requests += 1;
    if (url.pathname === JWKS_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600', 'access-control-allow-origin': '*' });
      return void res.end(req.method === 'GET' ? this.jwksBody : undefined);
    }
    if (url.pathname !== REST_PREFIX && !url.pathname.startsWith(`${REST_PREFIX}/`)) {
      return reply(res, 404, { message: `no route for ${url.pathname}; the REST API is under ${REST_PREFIX}/` });
    }
    // A CORS preflight carries no key; it is answered here and never costs PostgREST anything.
    if (req.method === 'OPTIONS') {
      res.writeHead(204, corsHeaders);
      return void res.end();
    }
    this.rest(req, res, url);
  }

  /** A REST call: its API key known, its own token (if any) this project's, then on to PostgREST. */
  private rest(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
    const headers = { ...req.headers };
    const apiKey = (headers.apikey as string | undefined) ?? url.searchParams.get('apikey') ?? undefined;
    if (!apiKey) return reply(res, 401, { message: 'No API key found in request', hint: 'Send the publishable (or anon) key as the apikey header.' });
    const role = this.keys.opaque[apiKey];
    if (!role && !this.legacy.has(apiKey)) return reply(res, 401, { message: 'Invalid API key', hint: 'Use the keys printed by baton stack env.' });
    url.searchParams.delete('apikey');
    // supabase-js sends the API key as the bearer too when it has no token of its own.
    const own = headers.authorization && headers.authorization !== `Bearer ${apiKey}` ? headers.authorization : undefined;
    if (own) {
      const refused = refuseTokenHeader(own.replace(/^Bearer\s+/i, ''), this.accepted);
      if (refused) return reply(res, 401, { code: 'PGRST301', message: `Invalid token: ${refused}`, hint: 'Use a token made for this project (baton agent token <id>).' });
    } else if (!role) {
      headers.authorization = `Bearer ${apiKey}`;
    }
    if (Number(headers['content-length'] ?? 0) > gatewayLimits.bodyBytes) return tooLarge(res);
    if (own || !role) return this.proxy(req, res, url, headers);
    this.roleToken(role).then((token) => {
      headers.authorization = `Bearer ${token}`;
      this.proxy(req, res, url, headers);
    }, (err: Error) => reply(res, 500, { message: `the gateway could not make a token for the ${role} role: ${err.message}` }));
  }

  /** The token the gateway sends for a role behind an opaque key, minted again before it expires. */
  private roleToken(role: Role): Promise<string> {
    const held = this.roleTokens.get(role);
    if (held && held.renewAt > Date.now()) return held.token;
    const token = this.keys.mintRoleToken(role, ROLE_TOKEN_SECONDS);
    this.roleTokens.set(role, { token, renewAt: Date.now() + (ROLE_TOKEN_SECONDS - ROLE_TOKEN_RENEW_SECONDS) * 1000 });
    return token;
  }

  /** Sends the request on to PostgREST, in its turn, and its answer back. */
  private proxy(req: http.IncomingMessage, res: http.ServerResponse, url: URL, headers: http.IncomingHttpHeaders): void {
    let gone = false;
    res.once('close', () => { gone = true; });
    void this.turns.take().then((done) => {
      // A caller that went away while it waited costs PostgREST nothing.
      if (gone) return done();
      this.forward(req, res, url, headers, done);
    });
  }

  /** The request to PostgREST; its turn ends with the answer's headers (PostgREST's work is done then). */
  private forward(req: http.IncomingMessage, res: http.ServerResponse, url: URL, headers: http.IncomingHttpHeaders, done: () => void): void {
    const upstream = http.request({
      host: '127.0.0.1',
      port: this.upstreamPort,
      method: req.method,
      path: (url.pathname.slice(REST_PREFIX.length) || '/') + url.search,
      headers,
      agent: this.agent,
      maxHeaderSize: gatewayLimits.upstreamHeaderBytes,
      timeout: gatewayLimits.upstreamSeconds * 1000,
    }, (upstreamRes) => {
      done();
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
    upstream.on('close', done);
    // A caller that goes away takes its upstream request with it.
    res.on('close', () => { if (!res.writableFinished) upstream.destroy(); });
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received <= gatewayLimits.bodyBytes) return;
      req.unpipe(upstream);
      upstream.destroy();
      tooLarge(res);
      req.destroy();
    });
    req.pipe(upstream);
  }

  /** The stack's metrics in Prometheus's text: requests, and Realtime against its quotas; the secret key only. */
  private metrics(req: http.IncomingMessage, res: http.ServerResponse): void {
    const apiKey = req.headers.apikey as string | undefined;
    const legacyRole = apiKey && this.legacy.has(apiKey) ? (decodeJwt(apiKey).role as string | undefined) : undefined;
    if (!apiKey || (this.keys.opaque[apiKey] ?? legacyRole) !== 'service_role') {
      return reply(res, 401, { message: 'the stack\'s metrics are for the secret (service-role) key', hint: 'Send SUPABASE_SECRET_KEY as the apikey header.' });
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(`# HELP baton_gateway_requests_total HTTP requests the gateway took since it started (REST and the JWKS; not health checks, nor these metrics).\n# TYPE baton_gateway_requests_total counter\nbaton_gateway_requests_total ${this.requests}\n${this.realtime?.metrics() ?? ''}`);
  }

  /** Realtime's WebSocket: the API key comes in the query string, as realtime-js sends it. */
  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    const url = new URL(req.url ?? '/', 'http://gateway');
    const apiKey = url.searchParams.get('apikey') ?? (req.headers.apikey as string | undefined);
    if (url.pathname !== REALTIME_PATH || !this.realtime) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    const role = apiKey ? this.keys.opaque[apiKey] : undefined;
    if (!apiKey || (!role && !this.legacy.has(apiKey))) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\n\r\n');
      return;
    }
    this.realtime.upgrade(req, socket, head, role ? { role } : { legacyKey: apiKey });
  }
}

function tooLarge(res: http.ServerResponse): void {
  reply(res, 413, { message: `the request body is larger than ${gatewayLimits.bodyBytes} bytes`, hint: 'Store large content elsewhere and send a link (an artifact uri).' });
}
