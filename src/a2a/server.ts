/**
 * `baton a2a`: Baton served over the Agent2Agent protocol (A2A 1.0, JSON-RPC and HTTP+JSON bindings), with the
 * official SDK doing the wire format. Each Baton agent has an agent card and an endpoint; a message to
 * it is a hand-off, made as the caller: the caller's bearer token is a Baton agent token, so
 * `from_agent` stays the database's truth, a stranger sees nothing and every quota and limit applies.
 *
 *   /agents/<id>/                         JSON-RPC and HTTP+JSON endpoint: hand off to that agent
 *   /agents/<id>/.well-known/agent-card.json
 *   /capabilities/<name>/                 JSON-RPC endpoint: offer the work to any agent with it
 *   /capabilities/<name>/.well-known/agent-card.json
 *   /, /.well-known/agent-card.json       the server's default agent (--agent), if it has one
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import express, { type NextFunction, type Request, type Response } from 'express';
import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import { UnauthenticatedUser } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { createBatonClient, type BatonClient } from '../client/agent.js';
import type { BatonDb } from '../client/connection.js';
import type { Logger } from '../logger.js';
import { Agent } from '../schemas.js';
import { BatonA2AHandler, type Target } from './handler.js';
import { inputModes } from './mapping.js';

export interface A2AServerOptions {
  /** The Baton project, and the API key callers' tokens go with (publishable or legacy anon). */
  url: string;
  publishableKey?: string;
  anonKey?: string;
  /** Reads the agents the cards describe: the operator's client, or any agent's (every agent sees every agent). */
  directory: BatonDb;
  /** The agent `/` and `/.well-known/agent-card.json` stand for. */
  defaultAgent?: string;
  host?: string;
  port?: number;
  /** The address callers reach this server at, for the cards (default: http://host:port). */
  publicUrl?: string;
  log: Logger;
}

export interface A2AServer {
  url: string;
  /** How many tasks the server follows for callers right now (open streams and blocking sends). */
  following(): number;
  close(): Promise<void>;
}

const bearer = (req: Request) => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];

/**
 * HTTP+JSON as the specification says it where the SDK does not. The media type: A2A 1.0.1 (11.1) says
 * application/a2a+json SHOULD be used for requests and responses, where 1.0 said application/json, and
 * A2A-Version names only 1.0 for both; so a caller is answered in the type it speaks: application/a2a+json
 * when its request is sent as that type or it accepts that type before application/json, else
 * application/json (a 1.0 caller, the conformance kit). The SDK answers in either, answer by answer.
 * ContentTypeNotSupported is 415 Unsupported Media Type (the error mapping of 5.4; the SDK sends 400).
 */
function jsonBodies(req: Request, res: Response): Response {
  const keep = speaksA2aJson(req);
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name: string, value: number | string | readonly string[]) =>
    setHeader(name, !keep && name.toLowerCase() === 'content-type' && typeof value === 'string' ? value.replace('application/a2a+json', 'application/json') : value);
  const json = res.json.bind(res);
  res.json = (body: { error?: { details?: Array<{ reason?: string }> } }) => {
    if (body?.error?.details?.some((d) => d.reason === 'CONTENT_TYPE_NOT_SUPPORTED')) res.status(415);
    // The SDK leaves the type to Express (application/json) on most answers: said here for a 1.0.1 caller.
    if (keep) res.setHeader('content-type', 'application/a2a+json');
    return json(body);
  };
  return res;
}

/** Whether a caller speaks application/a2a+json: it sent its request so, or accepts it before application/json. */
export function speaksA2aJson(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const sent = String(req.headers['content-type'] ?? '').toLowerCase();
  if (sent.startsWith('application/a2a+json')) return true;
  const accepted = String(req.headers.accept ?? '').toLowerCase().split(',').map((t) => t.split(';')[0]!.trim());
  const a2a = accepted.indexOf('application/a2a+json');
  const json = accepted.indexOf('application/json');
  return a2a >= 0 && (json < 0 || a2a < json);
}

/**
 * The JSON-RPC code of an error met before the SDK's handler: a body that is not JSON is JSON-RPC's
 * parse error; a missing or refused token, JSON-RPC's implementation-defined server error (A2A's own
 * codes, -32001 to -32009, each mean something else: -32001 is TaskNotFound); anything else, internal.
 */
function rpcCodeOf(err: { type?: string }, status: number): number {
  if (err.type === 'entity.parse.failed') return -32700;
  if (status === 401) return -32000;
  return status >= 500 ? -32603 : -32600;
}

export async function startA2AServer(options: A2AServerOptions): Promise<A2AServer> {
  return new A2AEndpoints(options).listen();
}

/** The server's routes: each agent's and capability's card and endpoint, the default agent's at /. */
class A2AEndpoints {
  private readonly clients = new Map<string, BatonClient>();
  private readonly following = new Set<object>();
  private readonly app = express();
  private base: string;

  constructor(private readonly options: A2AServerOptions) {
    this.base = options.publicUrl ?? '';
    this.route();
  }

  async listen(): Promise<A2AServer> {
    const { options, following } = this;
    const host = options.host ?? '127.0.0.1';
    const server: http.Server = await new Promise((resolve, reject) => {
      const s = this.app.listen(options.port ?? 0, host, (err?: Error) => (err ? reject(err) : resolve(s)));
    });
    const { port } = server.address() as AddressInfo;
    this.base ||= `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    return {
      url: this.base,
      following: () => following.size,
      async close() {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  private route(): void {
    const { app, options } = this;
    // A client that joins a base URL ending in / with a path starting with / ("…/agents/x//message:send")
    // means the single slash; the path is read so, its query left as it is.
    app.use((req, _res, next) => {
      const q = req.url.indexOf('?');
      const [pathPart, query] = q < 0 ? [req.url, ''] : [req.url.slice(0, q), req.url.slice(q)];
      if (pathPart.includes('//')) req.url = pathPart.replace(/\/{2,}/g, '/') + query;
      next();
    });
    const agentTarget = (req: Request): Target => ({ agent: String(req.params.id) });
    const capabilityTarget = (req: Request): Target => ({ capability: String(req.params.name) });
    const defaultTarget = (): Target | undefined => (options.defaultAgent ? { agent: options.defaultAgent } : undefined);
    app.get('/agents/:id/.well-known/agent-card.json', this.serveCard(agentTarget, (req) => `/agents/${encodeURIComponent(String(req.params.id))}/`));
    app.get('/capabilities/:name/.well-known/agent-card.json', this.serveCard(capabilityTarget, (req) => `/capabilities/${encodeURIComponent(String(req.params.name))}/`));
    app.get('/.well-known/agent-card.json', this.serveCard(defaultTarget, () => '/'));
    // Mounted, so that the SDK's handler sees the endpoint as its root.
    app.use('/agents/:id', express.json({ limit: '1mb' }), this.serveRpc(agentTarget));
    app.use('/capabilities/:name', express.json({ limit: '1mb' }), this.serveRpc(capabilityTarget));
    app.post('/', express.json({ limit: '1mb' }), this.serveRpc(defaultTarget));
    // The root card lists HTTP+JSON at / too: its paths, routed as they are (not mounted, which would strip them).
    app.all(/^\/(message:(send|stream)|tasks(\/.*)?|extendedAgentCard)$/, express.json({ limit: '1mb' }), this.serveRpc(defaultTarget));
    app.use((err: Error & { status?: number; type?: string }, _req: Request, res: Response, _next: NextFunction) => {
      const status = err.status ?? 500;
      if (status >= 500) options.log.error({ err }, 'A2A request failed');
      res.status(status).json({ jsonrpc: '2.0', id: null, error: { code: rpcCodeOf(err, status), message: status >= 500 ? 'internal error' : err.message } });
    });
  }

  /** The caller as a Baton agent, or a 401 that says what to send. */
  private async caller(req: Request): Promise<BatonClient> {
    const token = bearer(req);
    if (!token) throw Object.assign(new Error('A2A calls to Baton need a Baton agent token: Authorization: Bearer <token> (baton agent create <id> prints one)'), { status: 401 });
    const { clients, options } = this;
    let client = clients.get(token);
    try {
      client ??= createBatonClient({ url: options.url, publishableKey: options.publishableKey, anonKey: options.anonKey, token });
      // The database decides whether the token is live, on every request: a token revoked or expired a
      // moment ago is refused at once, as everywhere else in Baton.
      await client.agent(client.agentId);
    } catch (err) {
      clients.delete(token);
      throw Object.assign(new Error(`the token was refused: ${(err as Error).message}`), { status: 401 });
    }
    if (clients.size > 1000) clients.clear();
    clients.set(token, client);
    return client;
  }

  /** Who a card describes: an agent (its name, status and skills) or a capability. */
  private async described(target: Target): Promise<Pick<AgentCard, 'name' | 'description' | 'skills'>> {
    if ('capability' in target) {
      return {
        name: `Any Baton agent with "${target.capability}"`,
        description: `Offers the work to every Baton agent holding the capability "${target.capability}"; the first to claim it does it.`,
        skills: [skill(target.capability, target.capability, `Work needing "${target.capability}"`)],
      };
    }
    const { data, error } = await this.options.directory.from('agents').select('*').eq('id', target.agent).maybeSingle();
    if (error) throw error;
    if (!data) throw Object.assign(new Error(`no agent named "${target.agent}"`), { status: 404 });
    const agent = Agent.parse(data);
    return {
      name: agent.display_name ?? agent.id,
      description: `Baton agent "${agent.id}"${agent.status_message ? `: ${agent.status_message}` : ''}. A message hands it a task; its results and artifacts come back as the task's.`,
      skills: skillsOf(agent),
    };
  }

  private async card(target: Target, path: string): Promise<AgentCard> {
    const url = `${this.base}${path}`;
    return {
      ...await this.described(target), version: '1.0.0', iconUrl: undefined, documentationUrl: undefined,
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
        { url, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
        // Callers of A2A 0.3 (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe)
        // at the same address, mapped by the SDK's compatibility layer.
        { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
      ],
      provider: { organization: 'Baton', url: this.base },
      capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: { baton: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'A Baton agent token (baton agent create <id>): the caller acts as that agent.', scheme: 'bearer', bearerFormat: 'JWT' } } } },
      securityRequirements: [{ schemes: { baton: { list: [] } } }],
      defaultInputModes: inputModes,
      defaultOutputModes: ['text/plain', 'application/json', 'application/octet-stream'],
      signatures: [],
    };
  }

  private serveCard(target: (req: Request) => Target | undefined, path: (req: Request) => string) {
    return async (req: Request, res: Response, next: NextFunction) => {
      try {
        const t = target(req);
        if (!t) return res.status(404).json({ error: 'this server has no default agent', hint: 'Start it with --agent <id>, or use /agents/<id>/.well-known/agent-card.json.' });
        // On the wire as A2A's JSON says it (the SDK's toJSON: a security scheme is {"httpAuthSecurityScheme": …},
        // not the SDK's internal {"scheme": {"$case": …}}); cacheable for a while, as cards are.
        return res.set('Cache-Control', 'public, max-age=300').json(AgentCard.toJSON(await this.card(t, path(req))));
      } catch (err) {
        next(err);
      }
    };
  }

  private serveRpc(target: (req: Request) => Target | undefined) {
    return async (req: Request, res: Response, next: NextFunction) => {
      try {
        const t = target(req);
        if (!t) return res.status(404).json({ error: 'this server has no default agent', hint: 'Start it with --agent <id>, or post to /agents/<id>.' });
        const client = await this.caller(req);
        const path = 'agent' in t ? (req.baseUrl ? `/agents/${encodeURIComponent(t.agent)}/` : '/') : `/capabilities/${encodeURIComponent(t.capability)}/`;
        // A caller that goes away (a closed stream, a blocking send given up) stops what follows its task.
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        const handler = new BatonA2AHandler(client, t, () => this.card(t, path), this.options.log, { callerGone: gone.signal, following: this.following });
        const options = { requestHandler: handler, userBuilder: async () => new UnauthenticatedUser() };
        // A JSON-RPC call that names its method as A2A 1.0 does (SendMessage; 0.3 said message/send) is a
        // 1.0 call even without an A2A-Version header, which the specification would read as 0.3 and the
        // SDK then refuse: OpenClaw's A2A channel sends 1.0 requests with no header.
        const method = (req.body as { method?: unknown } | undefined)?.method;
        if (!req.headers['a2a-version'] && typeof method === 'string' && /^[A-Z][A-Za-z]+$/.test(method)) req.headers['a2a-version'] = '1.0';
        // Both bindings at one address: JSON-RPC is a POST to it, HTTP+JSON its paths (/message:send, /tasks/…),
        // each to its own handler (the JSON-RPC one refuses any type but application/json, which an
        // HTTP+JSON request sent as application/a2a+json is not). The caller's trace goes on: a hand-off
        // it asks for records the caller's context.
        const rpc = req.method === 'POST' && req.path === '/';
        return context.with(propagation.extract(ROOT_CONTEXT, req.headers), () => (rpc
          ? jsonRpcHandler({ ...options, legacyCompat: { enabled: true } })(req, res, next)
          : restHandler(options)(req, jsonBodies(req, res), next)));
      } catch (err) {
        next(err);
      }
    };
  }
}

const skill = (id: string, name: string, description: string): AgentCard['skills'][number] => ({
  id, name, description, tags: [id], examples: [], inputModes: [], outputModes: [], securityRequirements: [],
});

/** The agent's skills_offered where it lists some ({id, name, description} or strings), else one per capability. */
function skillsOf(agent: Agent): AgentCard['skills'] {
  const offered = Array.isArray(agent.skills_offered) ? agent.skills_offered : [];
  const named = offered.flatMap((s: unknown) => {
    if (typeof s === 'string') return [skill(s, s, s)];
    if (s && typeof s === 'object' && typeof (s as { name?: unknown }).name === 'string') {
      const o = s as { id?: string; name: string; description?: string };
      return [skill(o.id ?? o.name, o.name, o.description ?? o.name)];
    }
    return [];
  });
  return named.length ? named : agent.capabilities.map((c) => skill(c, c, `Work needing "${c}"`));
}
