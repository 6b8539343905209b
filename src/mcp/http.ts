/**
 * `baton mcp --http`: Baton's MCP server over Streamable HTTP, for hosts that do not run on the agent's
 * machine. Each session acts as the agent whose token came with it (`Authorization: Bearer …`), as the
 * stdio server acts as the agent in its environment; the database still decides what that agent may do.
 *
 * As MCP's authorization section asks of a protected resource: a request without a token, or with one
 * that is not a live agent token, gets 401 with `WWW-Authenticate` naming the resource's metadata
 * (RFC 9728, served at /.well-known/oauth-protected-resource); a token is taken from the header only,
 * never from the URL; a session is bound to the token that opened it. Baton's tokens are issued by the
 * operator (`baton agent create`), not by an OAuth authorization server, so the metadata names none.
 * Artifacts given as paths are refused: they would be this machine's files, read for a caller elsewhere.
 *
 * Both eras on one endpoint, as the SDK routes them (`isLegacyRequest`): a 2025 host's `initialize` opens
 * a session (the 1.x line's transport, with 2025-11-25's tasks); a 2026-07-28 request, stateless,
 * carrying its protocol version in `_meta`, is served by the 2.x line's handler from a server of the
 * token's agent made for that request (modern.ts). The agent behind a token is kept while it is heard
 * from (it says it is alive, as a session does), and let go after the same idle time.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpHandler, isLegacyRequest, type McpHttpHandler } from '@modelcontextprotocol/server';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt } from 'jose';
import { createBatonClient, type BatonClient } from '../client/agent.js';
import type { AgentKeyOptions } from '../client/connection.js';
import { UnauthorizedError } from '../errors.js';
import { silentLogger, type Logger } from '../logger.js';
import { createBatonMcp, type BatonMcp, type McpOptions } from './server.js';

export interface McpHttpOptions extends McpOptions {
  /** Where agents reach the project, and its publishable (or anon) key. */
  project: { url: string } & AgentKeyOptions;
  port: number;
  /** The address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 behind a TLS proxy). */
  host?: string;
  /** The server's address as hosts reach it (behind a proxy), for its metadata; default http://host:port. */
  publicUrl?: string;
  /** A session not heard from for this long is closed (minutes, default 30). */
  idleMinutes?: number;
  /** The largest request body taken (bytes, default 4 MB). */
  maxBodyBytes?: number;
}

export interface McpHttpServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:8765/mcp. */
  url: string;
  /** How many sessions are open. */
  sessions(): number;
  close(): Promise<void>;
}

interface Session {
  token: string;
  transport: StreamableHTTPServerTransport;
  mcp: BatonMcp;
  heardAt: number;
}

/** The agent behind a token, for its stateless 2026-07-28 requests, with the handler that serves them. */
interface Stateless {
  mcp: BatonMcp;
  heardAt: number;
  handler: McpHttpHandler;
}

/**
 * The 2.x line's handler for one agent's 2026-07-28 requests: a server of the agent made for each, and
 * the agent's inbox and tasks watched for its subscriptions/listen streams. One per agent, so what
 * changed for one agent reaches only its own listeners (every agent's inbox is baton://inbox).
 */
function handlerOf(mcp: BatonMcp, log: Logger): McpHttpHandler {
  const handler = createMcpHandler(() => mcp.modern(), { legacy: 'reject', onerror: (err) => log.debug({ err }, 'a 2026-07-28 request over HTTP was refused') });
  mcp.watch(async (uri) => { handler.notify.resourceUpdated(uri); });
  return handler;
}


const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** Serves MCP at /mcp until closed. */
export async function serveMcpHttp(options: McpHttpOptions): Promise<McpHttpServer> {
  const log = options.log ?? silentLogger;
  const host = options.host ?? '127.0.0.1';
  const sessions = new Map<string, Session>();
  const stateless = statelessRequests(options, log);
  const idleMs = (options.idleMinutes ?? 30) * 60_000;
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
  let base = '';

  const refuse = (res: http.ServerResponse, status: number, error: string, description: string, hint?: string) =>
    refuseRequest(base, res, status, error, description, hint);
  const open = (token: string) => openSession(options, log, sessions, token);

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', base);
    if (req.method === 'GET' && (url.pathname === METADATA_PATH || url.pathname === `${METADATA_PATH}/mcp`)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(resourceMetadata(base)));
    }
    if (url.pathname !== '/mcp') return refuse(res, 404, 'not_found', `nothing at ${url.pathname}: the MCP endpoint is ${base}/mcp`);
    if (url.searchParams.has('access_token') || url.searchParams.has('token')) {
      return refuse(res, 400, 'invalid_request', 'a token in the URL is refused (URLs end up in logs)', 'Send it as the Authorization header: Bearer <the agent\'s token>.');
    }
    const token = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return refuse(res, 401, 'invalid_request', 'this MCP server needs an agent\'s token', 'Send Authorization: Bearer <the token printed by baton agent create>.');
    const expired = expiredSince(token);
    if (expired) return refuse(res, 401, 'invalid_token', `the token expired at ${expired}`, 'Ask the operator for a new one (baton agent token <id>).');

    const sessionId = req.headers['mcp-session-id'];
    let session = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // A session answers only to the token that opened it; to any other it does not exist.
    if (sessionId !== undefined && (!session || session.token !== token)) {
      return refuse(res, 404, 'session_not_found', 'no such MCP session (it ended, or the server restarted)', 'Initialize a new session.');
    }
    const body = req.method === 'POST' ? await readJson(req, maxBody).catch((err: Error) => err) : undefined;
    if (body instanceof Error) return refuse(res, 400, 'invalid_request', body.message);
    const web = req.method === 'POST' && sessionId === undefined ? webRequest(req, base, body) : undefined;
    // The SDK's routing reads the parsed body, not the request's (a clone keeps it for the handler either way).
    if (web && !(await isLegacyRequest(web.clone(), body))) return stateless.serve(web, body, token, res, refuse);
    if (!session) {
      const initializing = Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
      if (!initializing) return refuse(res, 400, 'invalid_request', 'no session: a request without Mcp-Session-Id must be initialize', 'Initialize first, then send the session id it returns.');
      const opened = await open(token);
      if (typeof opened === 'string') return refuse(res, 401, 'invalid_token', opened, 'Use a live agent token: baton agent create <id>, or baton agent token <id> for a new one.');
      session = opened;
    }
    session.heardAt = Date.now();
    await session.transport.handleRequest(req, res, body);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'an MCP request over HTTP failed');
      if (!res.headersSent) refuse(res, 500, 'server_error', 'the MCP server failed on this request: see its log');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  base = (options.publicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');

  const sweep = setInterval(() => { closeIdle(sessions, idleMs, log); stateless.closeIdle(idleMs); }, Math.min(idleMs, 60_000));
  sweep.unref();

  return {
    url: `${base}/mcp`,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
      await stateless.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The protected resource's metadata (RFC 9728): where it is and how a token comes; no authorization server, the operator issues tokens. */
function resourceMetadata(base: string) {
  return {
    resource: `${base}/mcp`,
    bearer_methods_supported: ['header'],
    resource_name: 'Baton: this agent\'s hand-offs, tasks and inbox',
  };
}

/** An error as JSON-RPC, with `WWW-Authenticate` on a 401 naming the metadata (and the error, but for a missing token). */
function refuseRequest(base: string, res: http.ServerResponse, status: number, error: string, description: string, hint?: string): void {
  if (status === 401) {
    res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${base}${METADATA_PATH}/mcp"${error === 'invalid_request' ? '' : `, error="${error}", error_description="${description.replaceAll('"', "'")}"`}`);
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: description, data: { error, hint } }, id: null }));
}

/**
 * The 2026-07-28 requests: each served by the 2.x line's handler from a server of its token's agent,
 * made for that request; the agent behind a token kept while heard from.
 */
function statelessRequests(options: McpHttpOptions, log: Logger) {
  const agents = new Map<string, Stateless>();

  /** The agent of this token, opened on its first request (and said, as a session's host is). */
  const agentOf = async (token: string, body: unknown): Promise<Stateless | string> => {
    const known = agents.get(token);
    if (known) return known;
    const opened = await openAgent(options, token);
    if (typeof opened === 'string') return opened;
    // Two first requests at once: the later keeps the agent the earlier made.
    const kept = agents.get(token) ?? { mcp: opened, heardAt: Date.now(), handler: handlerOf(opened, log) };
    if (kept.mcp !== opened) void opened.stop().catch(() => undefined);
    agents.set(token, kept);
    const meta = (body as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params?._meta ?? {};
    log.info({ agent: kept.mcp.agentId, host: meta['io.modelcontextprotocol/clientInfo'], protocol: meta['io.modelcontextprotocol/protocolVersion'], capabilities: meta['io.modelcontextprotocol/clientCapabilities'] }, 'host connected');
    return kept;
  };

  return {
    async serve(request: Request, body: unknown, token: string, res: http.ServerResponse, refuse: (res: http.ServerResponse, status: number, error: string, description: string, hint?: string) => void): Promise<void> {
      const known = await agentOf(token, body);
      if (typeof known === 'string') return refuse(res, 401, 'invalid_token', known, 'Use a live agent token: baton agent create <id>, or baton agent token <id> for a new one.');
      known.heardAt = Date.now();
      return send(res, await known.handler.fetch(request, { authInfo: { token, clientId: known.mcp.agentId, scopes: [] }, parsedBody: body }));
    },
    closeIdle(idleMs: number): void {
      for (const [token, known] of agents) {
        if (Date.now() - known.heardAt < idleMs) continue;
        agents.delete(token);
        void known.handler.close().then(() => known.mcp.stop()).catch((err: unknown) => log.warn({ err }, 'could not stop an idle agent'));
      }
    },
    async close(): Promise<void> {
      await Promise.all([...agents.values()].map((a) => a.handler.close().then(() => a.mcp.stop()).catch(() => undefined)));
      agents.clear();
    },
  };
}

/** The agent of this token, started (alive, listening), or why the database refuses the token. */
async function openAgent(options: McpHttpOptions, token: string): Promise<BatonMcp | string> {
  let client: BatonClient;
  try {
    client = createBatonClient({ ...options.project, token });
  } catch (err) {
    return (err as Error).message;
  }
  const mcp = createBatonMcp(client, { ...options, allowPaths: false });
  // The first call says whether the database takes the token (signed by the project, not revoked, not expired).
  try {
    await mcp.start();
  } catch (err) {
    await mcp.stop().catch(() => undefined);
    if (err instanceof UnauthorizedError) return err.message;
    throw err;
  }
  return mcp;
}

/** A session for this token, or why the token is refused; it joins `sessions` once the transport names it. */
async function openSession(options: McpHttpOptions, log: Logger, sessions: Map<string, Session>, token: string): Promise<Session | string> {
  const mcp = await openAgent(options, token);
  if (typeof mcp === 'string') return mcp;
  let session!: Session;
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (id) => {
      sessions.set(id, session);
      log.info({ agent: mcp.agentId, session: id }, 'MCP session opened over HTTP');
    },
  });
  session = { token, transport, mcp, heardAt: Date.now() };
  transport.onclose = () => {
    const id = transport.sessionId;
    if (id && sessions.get(id) === session) sessions.delete(id);
    void mcp.stop().catch((err: unknown) => log.warn({ err }, 'could not stop an MCP session'));
  };
  await mcp.server.connect(transport);
  return session;
}

function closeIdle(sessions: Map<string, Session>, idleMs: number, log: Logger): void {
  for (const [id, s] of sessions) {
    if (Date.now() - s.heardAt < idleMs) continue;
    log.info({ session: id }, 'closing an idle MCP session');
    void s.transport.close();
  }
}

/** When the token expired, if its `exp` has passed; undefined while it is live or carries none (the database judges the rest). */
function expiredSince(token: string): string | undefined {
  try {
    const { exp } = decodeJwt(token);
    return typeof exp === 'number' && exp * 1000 <= Date.now() ? new Date(exp * 1000).toISOString() : undefined;
  } catch {
    return undefined;
  }
}

/** The request as the web's Request, its body the JSON already read, for the SDK's routing and its 2026-07-28 handler. */
function webRequest(req: http.IncomingMessage, base: string, body: unknown): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(req.url ?? '/mcp', base), { method: req.method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** The handler's answer, streamed as it comes (a response may be an event stream). */
async function send(res: http.ServerResponse, answer: Response): Promise<void> {
  res.writeHead(answer.status, Object.fromEntries(answer.headers));
  if (!answer.body) return void res.end();
  await new Promise<void>((resolve, reject) => {
    Readable.fromWeb(answer.body as never).on('error', reject).pipe(res).on('finish', resolve).on('error', reject);
  });
}

async function readJson(req: http.IncomingMessage, limit: number): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new Error(`the request body is over ${limit} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Error('the request body is not JSON');
  }
}
