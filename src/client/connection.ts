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
  /** Told of each answer: when its request was sent, its status and method. */
  answered?: (sentAt: number, status: number, method: string) => void;
}

const load = createRequire(import.meta.url);

/**
 * The `ws` package's WebSocket (Node 20 has none of its own), loaded when push first connects: a CLI
 * call that sends a request or two and exits never loads it.
 */
function WebSocketWhenNeeded(url: string, protocols?: string | string[]): object {
  const Socket = load('ws') as new (url: string, protocols?: string | string[]) => object;
  return new Socket(url, protocols);
}

/**
 * A supabase-js client for Baton: no sessions (agents are not users), a WebSocket that Node 20 lacks,
 * and a leaner fetch than Node's (src/client/http.ts).
 */
export function connect({ url, apiKey, accessToken, headers, answered }: ConnectOptions): BatonDb {
  const fetch: typeof batonFetch = headers || answered
    ? async (input, init = {}) => {
      const more = headers?.();
      const sentAt = Date.now();
      const answer = await batonFetch(input, more ? { ...init, headers: { ...headersOf(init.headers), ...more } } : init);
      answered?.(sentAt, answer.status, init.method ?? 'GET');
      return answer;
    }
    : batonFetch;
  return createClient<Database>(url, apiKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { fetch },
    realtime: { transport: WebSocketWhenNeeded as never },
    // Without an agent's token, the API key alone says who calls. supabase-js would otherwise hand the
    // key to Realtime as the join's access token, which an `sb_secret_…` key is not (it is no JWT): every
    // channel joined after the first connection would be refused.
    accessToken: async () => accessToken ?? null,
  });
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
