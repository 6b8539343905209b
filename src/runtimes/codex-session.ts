/**
 * Work into a person's running Codex session: the `codex-session` executor hands each task to a thread
 * of a `codex app-server` that a person runs and watches (`codex --remote …` attached to it), as a new
 * turn of that thread, and reports the turn's outcome as the task's. The person sees the task arrive in
 * their session, and what Codex does with it, as if they had typed it; they may interrupt it.
 *
 * Codex's app-server protocol (experimental in Codex 0.171): JSON-RPC over a WebSocket, on a Unix
 * socket (`unix://PATH`) or a TCP address (`ws://host:port`, with a bearer token where the server asks
 * for one). Per task: `thread/resume` subscribes this connection to the thread's events; the turn
 * starts once the thread is idle (a turn started on a busy thread would join the person's own turn);
 * `turn/start` carries the task; `item/completed` gives the agent's messages, `thread/tokenUsage/updated`
 * each model call's tokens (recorded as they come), `turn/completed` the end. A cancel, the claim
 * lapsing or the timeout interrupts the turn (`turn/interrupt`).
 *
 * What Baton does not do for the person: it answers none of the server's approval requests (a command
 * Codex wants to run waits for the person, as their session's approval policy says), and it runs one
 * task at a time per thread.
 */
import fs from 'node:fs';
import WebSocket from 'ws';
import { z } from 'zod';
import { RetryableError, UnavailableError, type AgentRuntime, type ExecutorContext, type Handler } from '../contract.js';
import { ConfigError, namedVariable } from '../config.js';
import { silentLogger, type Logger } from '../logger.js';
import type { Task } from '../schemas.js';
import { answerMessage, questionNews, replyResult, resultNews, workMessage, type Teller } from './conversation.js';

export const CodexSessionSpec = z.strictObject({
  'codex-session': z.strictObject({
    /** The app server's address, as `codex --remote` takes it: unix:///path/to/socket, or ws://host:port. */
    url: z.string().regex(/^(unix:\/\/\/.+|wss?:\/\/.+)$/, 'an app server address: unix:///path/to/socket or ws://host:port'),
    /** The thread (a session's id) to work in; by default the one thread the app server has loaded. */
    thread: z.string().min(1).optional(),
    /** The variable holding the bearer token of a ws:// app server started with --ws-auth. */
    tokenEnv: z.string().optional(),
    /** How long one turn may take before it is interrupted, in seconds. */
    timeoutSeconds: z.number().positive().default(1800),
  }),
});
export type CodexSessionSpec = z.infer<typeof CodexSessionSpec>;
type Options = CodexSessionSpec['codex-session'];

interface TurnState { id: string; status: 'completed' | 'interrupted' | 'failed' | 'inProgress'; error?: { message?: string } | null; items?: Array<{ type: string; text?: string }> }
interface Usage { inputTokens: number; cachedInputTokens: number; outputTokens: number }
type Listener = (method: string, params: Record<string, unknown>) => void;

/** One connection to the app server: requests answered by id, notifications to whoever listens. */
class AppServer {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<Listener>();
  closed?: Error;

  private constructor(private readonly ws: WebSocket, readonly address: string) {
    ws.on('message', (data) => this.received(String(data)));
    ws.on('close', () => this.lost(new UnavailableError(`the Codex app server at ${address} closed the connection`)));
    ws.on('error', (err) => this.lost(new UnavailableError(`the Codex app server at ${address} failed: ${err.message}`, { cause: err })));
  }

  static async open(options: Options & { token?: string }, version: string): Promise<AppServer> {
    const { token } = options;
    const target = options.url.startsWith('unix://') ? `ws+unix://${options.url.slice('unix://'.length)}:/` : options.url;
    const ws = new WebSocket(target, { headers: token ? { Authorization: `Bearer ${token}` } : {}, handshakeTimeout: 10_000 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (err) => reject(new UnavailableError(`cannot reach the Codex app server at ${options.url}: ${err.message} (is \`codex app-server --listen ${options.url}\` running?)`, { cause: err })));
      ws.once('unexpected-response', (_req, res) => reject(new UnavailableError(`the Codex app server at ${options.url} answered HTTP ${res.statusCode}${res.statusCode === 401 ? ': set tokenEnv to the variable holding its token' : ''}`)));
    });
    const server = new AppServer(ws, options.url);
    await server.request('initialize', { clientInfo: { name: 'baton', title: 'Baton', version }, capabilities: null });
    server.notify('initialized');
    return server;
  }

  request<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    if (this.closed) return Promise.reject(this.closed);
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify(method: string): void {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method }));
  }

  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.ws.close();
  }

  private received(text: string): void {
    let message: { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { message?: string } };
    try { message = JSON.parse(text); } catch { return; }
    if (message.method) {
      // A request of the server's (an approval) is the person's to answer, in their session.
      if (message.id === undefined) for (const l of this.listeners) l(message.method, message.params ?? {});
      return;
    }
    const waiter = message.id === undefined ? undefined : this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id!);
    if (message.error) waiter.reject(new Error(message.error.message ?? 'the app server refused the request'));
    else waiter.resolve(message.result ?? {});
  }

  private lost(err: Error): void {
    this.closed ??= err;
    for (const w of this.waiting.values()) w.reject(this.closed);
    this.waiting.clear();
    for (const l of this.listeners) l('baton/lost', {});
  }
}

/** The person's session: one connection to its app server, and its turns one at a time. */
class Session {
  private connecting?: Promise<AppServer>;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: Options & { token?: string }, private readonly version: string) {}

  /** Runs `work` once the turns before it have ended, with the app server and the session's thread. */
  inTurn<T>(work: (server: AppServer, threadId: string, model: string) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      const server = await this.connection();
      const threadId = this.options.thread ?? await onlyThread(server);
      // Subscribes this connection to the thread's events.
      const resumed = await server.request<{ model?: string; thread?: { model?: string } }>('thread/resume', { threadId, excludeTurns: true })
        .catch((err: Error) => { throw new UnavailableError(`the Codex app server at ${this.options.url} has no thread ${threadId}: ${err.message}`, { cause: err }); });
      return work(server, threadId, resumed.model ?? resumed.thread?.model ?? 'codex');
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** One turn of the thread with `text`, once the person's own turn (if any) has ended: Codex's last message. */
  async turn(server: AppServer, threadId: string, text: string, model: string, ctx: TurnContext): Promise<string> {
    const read = await server.request<{ thread?: { status?: { type?: string } } }>('thread/read', { threadId });
    return turn(server, threadId, text, model, read.thread?.status?.type !== 'active', this.options.timeoutSeconds, ctx);
  }

  private async connection(): Promise<AppServer> {
    const server = await (this.connecting ??= AppServer.open(this.options, this.version).catch((err: unknown) => { this.connecting = undefined; throw err; }));
    if (!server.closed) return server;
    this.connecting = undefined;
    return this.connection();
  }
}

type TurnContext = Pick<ExecutorContext, 'signal' | 'usage' | 'log'>;

/** The `codex-session` executor: each task a turn of the person's thread, one at a time. */
export function codexSessionExecutor(options: Options & { token?: string }, version: string): Handler {
  const session = new Session(options, version);
  return (task: Task, ctx: ExecutorContext) => session.inTurn(async (server, threadId, model) => {
    let text = workMessage(task, ctx);
    for (;;) {
      const reply = await session.turn(server, threadId, text, model, ctx);
      const answer = await ctx.answered();
      if (answer === undefined) return replyResult(reply, ctx, 'the Codex session');
      ctx.log.info({ threadId }, 'the Codex session asked, and was answered; the answer goes into the same thread');
      text = answerMessage(task, answer);
    }
  });
}

/**
 * Tells the person's session the news of the tasks its agent handed over (`tell` in baton.agent.json):
 * a result, or a question the worker asks, each as a turn of the session, so that the person (and
 * Codex) hear of it without polling. What that turn spends is the person's, not a task's: it is not
 * recorded.
 */
export function codexSessionTeller(options: Options & { token?: string }, version: string, log?: Pick<Logger, 'warn'>): Teller {
  const session = new Session(options, version);
  const quiet: TurnContext = { signal: new AbortController().signal, usage: async () => undefined, log: silentLogger };
  const tell = (text: string) => session.inTurn((server, threadId, model) => session.turn(server, threadId, text, model, quiet))
    .then(() => undefined, (err: unknown) => log?.warn({ err }, 'could not tell the Codex session the news'));
  return { onResult: (task) => tell(resultNews(task)), onQuestion: (task, asked) => tell(questionNews(task, asked)) };
}

/** One turn of the thread, started once it is idle: the agent's last message, its spend recorded as it comes. */
function turn(server: AppServer, threadId: string, text: string, model: string, idle: boolean, timeoutSeconds: number, ctx: TurnContext): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let turnId: string | undefined;
    let reply = '';
    const early: Array<[string, Record<string, unknown>]> = [];
    let settled = false;
    const finish = (err: Error | undefined, value = '') => {
      if (settled) return;
      settled = true;
      stopListening();
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', interrupt);
      if (err) reject(err); else resolve(value);
    };
    const onEvent = (method: string, params: Record<string, unknown>) => {
      if (method === 'baton/lost') return finish(server.closed ?? new UnavailableError('the Codex app server went away'));
      if (params.threadId !== threadId) return;
      if (method === 'thread/status/changed' && (params.status as { type?: string })?.type === 'idle' && !idle) {
        idle = true;
        return void start();
      }
      const of = (params.turnId as string | undefined) ?? (params.turn as TurnState | undefined)?.id;
      if (!turnId) { if (of) early.push([method, params]); return; }
      if (of !== turnId) return;
      if (method === 'item/completed') {
        const item = params.item as { type?: string; text?: string };
        if (item?.type === 'agentMessage' && item.text) reply = item.text;
      } else if (method === 'thread/tokenUsage/updated') {
        const last = (params.tokenUsage as { last?: Usage })?.last;
        if (last) void spent(last);
      } else if (method === 'turn/completed') {
        const done = params.turn as TurnState;
        if (done.status === 'completed') return finish(undefined, reply);
        if (ctx.signal.aborted) return finish(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('stopped'));
        if (done.status === 'interrupted') return finish(new Error('the turn was interrupted in the Codex session (by the person at it)'));
        finish(new RetryableError(`the Codex session's turn failed: ${done.error?.message ?? 'no reason given'}`));
      }
    };
    const spent = (last: Usage) => ctx.usage({
      runtime: 'codex-session', model, sessionId: threadId, turns: 1,
      inputTokens: Math.max(0, last.inputTokens - last.cachedInputTokens), outputTokens: last.outputTokens, cachedTokens: last.cachedInputTokens,
    }).catch((err: unknown) => ctx.log.warn({ err }, 'could not record what the turn spent'));
    const stopListening = server.listen(onEvent);
    const interrupt = () => {
      if (turnId) void server.request('turn/interrupt', { threadId, turnId }).catch(() => undefined);
      else finish(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('stopped'));
    };
    ctx.signal.addEventListener('abort', interrupt, { once: true });
    const timer = setTimeout(() => {
      interrupt();
      finish(new RetryableError(`the Codex session's turn took over ${timeoutSeconds} s and was interrupted`));
    }, timeoutSeconds * 1000);
    const start = () => {
      server.request<{ turn?: TurnState }>('turn/start', { threadId, input: [{ type: 'text', text, text_elements: [] }] }).then(({ turn: started }) => {
        turnId = started?.id;
        if (!turnId) return finish(new RetryableError('the Codex app server started no turn'));
        if (ctx.signal.aborted) interrupt();
        for (const [method, params] of early.splice(0)) onEvent(method, params);
      }, (err: Error) => finish(new RetryableError(`the Codex app server did not start the turn: ${err.message}`, { cause: err })));
    };
    if (idle) start();
    else ctx.log.info({ threadId }, 'the Codex session is busy with a turn of its own; the task waits for it to end');
  });
}

/**
 * The person's one thread, where the config names none: of the threads the app server has loaded, the
 * one a person started (not an ephemeral one Codex keeps for itself, such as the thread that names a
 * session, nor a sub-agent's).
 */
async function onlyThread(server: AppServer): Promise<string> {
  const { data = [] } = await server.request<{ data?: string[] }>('thread/loaded/list', {});
  const threads = await Promise.all(data.map((threadId) => server.request<{ thread?: LoadedThread }>('thread/read', { threadId }).then((r) => r.thread, () => undefined)));
  const persons = threads.filter((t): t is LoadedThread => Boolean(t && !t.ephemeral && !t.parentThreadId && (t.threadSource ?? 'user') === 'user'));
  if (persons.length === 1) return persons[0]!.id;
  throw new UnavailableError(persons.length
    ? `the Codex app server at ${server.address} has ${persons.length} sessions open (${persons.map((t) => `${t.id}${t.name ? ` "${t.name}"` : ''}`).join(', ')}): name the one to work in with "thread"`
    : `the Codex app server at ${server.address} has no session open: start one in it (codex --remote ${server.address}) or name one with "thread"`);
}

interface LoadedThread { id: string; ephemeral?: boolean; parentThreadId?: string | null; threadSource?: string | null; name?: string | null }

/** The options of an entry, with its token read (a ConfigError at start-up where its variable is unset). */
export function sessionOptions(spec: CodexSessionSpec, what: string): Options & { token?: string } {
  const options = spec['codex-session'];
  const token = options.tokenEnv ? namedVariable(options.tokenEnv) : undefined;
  if (options.tokenEnv && !token) throw new ConfigError(`${what}: ${options.tokenEnv} is set neither in the environment nor in the project's .env; it holds the token of the Codex app server at ${options.url}`);
  return { ...options, token };
}

export const codexSession: AgentRuntime<CodexSessionSpec> = {
  key: 'codex-session',
  about: '"codex-session" (a person\'s running Codex app server, {"codex-session": {"url": "unix:///…", "thread": …}})',
  spec: CodexSessionSpec,
  // The person's Codex loads the skill from its own folder: baton skill install --codex.
  skills: [],
  async executor(spec, setting) {
    const options = sessionOptions(spec, setting.what);
    if (options.url.startsWith('unix://') && !fs.existsSync(options.url.slice('unix://'.length))) {
      setting.log?.warn({ executor: setting.what, url: options.url }, 'no Codex app server socket there yet: tasks are handed back until one listens');
    }
    return codexSessionExecutor(options, setting.version ?? 'unknown');
  },
};
