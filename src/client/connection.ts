import { createRequire } from 'node:module';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import type { z } from 'zod';
import type { Database, Json } from '../database.types.js';
import { refusalOf, toBatonError, unreadableAnswer } from '../errors.js';
import { batonFetch, headersOf } from './http.js';

/** A supabase-js client typed with the schema (src/database.types.ts, generated from the migrations). */
export type BatonDb = SupabaseClient<Database>;

export interface ConnectOptions {
  url: string;
  /** The project's publishable or anon key (agents), or secret or service-role key (operators); sent as `apikey`. */
  apiKey: string;
  /** A JWT to act with instead of the API key: an agent's own token. */
  accessToken?: string;
  /** Headers added to every REST request as it leaves, read each time (a daemon's incarnation). */
  headers?: () => Record<string, string> | undefined;
}

const load = createRequire(import.meta.url);

interface WsLike {
  on(event: 'unexpected-response', listener: (req: unknown, res: NodeJS.ReadableStream & { statusCode?: number }) => void): void;
  terminate(): void;
}

/** What Realtime last said when it refused a connection (hosted answers a quota with HTTP 429), per client. */
const refusedConnections = new WeakMap<object, { said?: string }>();

/** What Realtime said when it last refused this client's connection, taken once; undefined if nothing. */
export function takeConnectionRefusal(db: BatonDb): string | undefined {
  const seen = refusedConnections.get(db);
  const said = seen?.said;
  if (seen) seen.said = undefined;
  return said;
}

/**
 * The `ws` package's WebSocket (Node 20 has none of its own), loaded when push first connects: a CLI
 * call that sends a request or two and exits never loads it. A connection refused with an HTTP answer
 * (hosted's 429 for a plan's connections) is kept in `seen`, status and body, for push to say why;
 * the socket then fails as it would have.
 */
function webSocketWhenNeeded(seen: { said?: string }) {
  return function WebSocketWhenNeeded(url: string, protocols?: string | string[]): object {
    const Socket = load('ws') as new (url: string, protocols?: string | string[]) => WsLike;
    const socket = new Socket(url, protocols);
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      const done = () => {
        clearTimeout(timer);
        const error = (() => { try { return (JSON.parse(body) as { error?: string; message?: string }).error; } catch { return undefined; } })();
        seen.said = `HTTP ${res.statusCode}${error ? `: ${error}` : ''}`;
        socket.terminate();
      };
      const timer = setTimeout(done, 2000);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk.slice(0, 1000); });
      res.on('end', done);
      res.on('error', done);
    });
    return socket;
  };
}

/**
 * How long realtime-js waits before its `tries`th reconnect: drawn at random from one second up to a
 * ceiling that doubles from 5 s to a minute. realtime-js's own steps (1, 2, 5, then every 10 s) are the
 * same for every client, so a fleet that lost its connections at once (a restart, a network blip)
 * would come back in step, every one of them joining its channels in the same second; spread, they stay
 * under a plan's joins per second.
 */
export function reconnectAfterMs(tries: number): number {
  const ceiling = Math.min(60_000, 5_000 * 2 ** Math.max(0, tries - 1));
  return 1_000 + Math.random() * (ceiling - 1_000);
}

/**
 * A channel whose join went unanswered (TIMED_OUT: a busy Realtime, a busy database judging the join)
 * is joined again by realtime-js after 1, 2, 5, then every 10 s, the same steps for every client; a
 * fleet whose joins timed out together would send them again together. Its channels wait
 * reconnectAfterMs instead, spread and growing. realtime-js takes no option for it (its Phoenix socket
 * does, as `rejoinAfterMs`, read by each channel made after it is set); a socket without one is left
 * as it is.
 */
function spreadRejoins(db: BatonDb): void {
  const socket = (db.realtime as unknown as { socketAdapter?: { socket?: { rejoinAfterMs?: unknown } } }).socketAdapter?.socket;
  if (socket && typeof socket.rejoinAfterMs === 'function') socket.rejoinAfterMs = reconnectAfterMs;
}

/**
 * A supabase-js client for Baton: no sessions (agents are not users), a WebSocket that Node 20 lacks,
 * and a leaner fetch than Node's (src/client/http.ts).
 */
export function connect({ url, apiKey, accessToken, headers }: ConnectOptions): BatonDb {
  const fetch: typeof batonFetch = headers
    ? (input, init = {}) => {
      const more = headers();
      return batonFetch(input, more ? { ...init, headers: { ...headersOf(init.headers), ...more } } : init);
    }
    : batonFetch;
  const seen: { said?: string } = {};
  const db = createClient<Database>(url, apiKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { fetch },
    realtime: { transport: webSocketWhenNeeded(seen) as never, reconnectAfterMs },
    // Without an agent's token, the API key alone says who calls. supabase-js would otherwise hand the
    // key to Realtime as the join's access token, which an `sb_secret_…` key is not (it is no JWT): every
    // channel joined after the first connection would be refused.
    accessToken: async () => accessToken ?? null,
  });
  spreadRejoins(db);
  refusedConnections.set(db, seen);
  made.set(db, { url, apiKey, accessToken });
  return db;
}

/** What each client was connected with, for another connection like it. */
const made = new WeakMap<object, Pick<ConnectOptions, 'url' | 'apiKey' | 'accessToken'>>();

/** A new client connected as `db` is (for Realtime: a connection of its own, acting as the same caller). */
export function anotherConnection(db: BatonDb): BatonDb {
  const options = made.get(db);
  if (!options) throw new Error('anotherConnection: this client was not made by connect()');
  return connect(options);
}

/** A value already checked by a zod schema, as the JSON type the generated schema expects. */
export const asJson = (value: unknown): Json => value as Json;

/** The API key an agent sends: the project's publishable key, or its legacy anon key. */
export interface AgentKeyOptions {
  /** The project's publishable key (sb_publishable_…). */
  publishableKey?: string;
  /** The legacy anon key; either works. */
  anonKey?: string;
}

export function agentApiKey({ publishableKey, anonKey }: AgentKeyOptions): string {
  const key = publishableKey ?? anonKey;
  if (!key) throw new Error('an agent client needs the project\'s publishableKey (or legacy anonKey)');
  return key;
}

type PostgrestResult = { data: unknown; status?: number; error: { code?: string; message: string; details?: string | null; hint?: string | null } | null };

/** Where a supabase-js query went: its builder carries the URL. */
function requestUrl(call: PromiseLike<PostgrestResult>): URL | undefined {
  const url = (call as { url?: unknown }).url;
  return url instanceof URL ? url : undefined;
}

const requestOrigin = (call: PromiseLike<PostgrestResult>) => requestUrl(call)?.origin;

/** An answer parsed with `schema`; one it does not fit is an UnreadableAnswerError naming the request. */
function readAnswer<S extends z.ZodType>(call: PromiseLike<PostgrestResult>, schema: S, data: unknown): z.infer<S> {
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const request = requestUrl(call)?.pathname.replace(/^\/rest\/v1\//, '') ?? 'a request';
  throw unreadableAnswer(request, parsed.error.issues);
}

/** The data of a supabase-js call parsed with `schema`, or its error as a typed Baton error. */
export async function unwrap<S extends z.ZodType>(call: PromiseLike<PostgrestResult>, schema: S): Promise<z.infer<S>> {
  const { data, error, status } = await call;
  if (error) throw toBatonError(error, { status, url: requestOrigin(call) });
  return readAnswer(call, schema, data);
}

/** Parses caller input, turning zod's issues into one ValidationError that names each field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
    // A misspelt option is not dropped: a broadcast given `capabilities` for `requiredCapabilities` would go to anyone.
    if (issue.code === 'unrecognized_keys') return `${where}no such field ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    return `${where}${issue.message}`;
  });
  throw refusalOf('BT005', {
        message: `invalid input: ${problems.join('; ')}`,
    hint: 'Fix the fields named above and try again.',
  });
}

/** Like unwrap for a query of at most one row; no row is a NotFoundError saying what was missing. */
export async function unwrapOne<S extends z.ZodType>(
  call: PromiseLike<PostgrestResult>, schema: S, missing: { message: string; hint: string },
): Promise<z.infer<S>> {
  const { data, error, status } = await call;
  if (error) throw toBatonError(error, { status, url: requestOrigin(call) });
  if (data === null) throw refusalOf('BT002', { ...missing });
  return readAnswer(call, schema, data);
}
