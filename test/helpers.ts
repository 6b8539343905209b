import crypto from 'node:crypto';
import type { SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { afterAll, expect, inject } from 'vitest';
import { createBatonClient, type BatonClient } from '../src/client/agent.js';
import type { BatonDb } from '../src/client/connection.js';
import { BatonError } from '../src/errors.js';
import type { Task } from '../src/schemas.js';
import { adminFor, agentKey } from './keys-mode.js';

export const stack = inject('stack');
/** The suite works as a new Supabase project does (a secret key, ES256 agent tokens), or as a legacy one. */
export const admin = adminFor(stack);

/** An id no other test uses, so test files can run side by side on one stack. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${crypto.randomBytes(4).toString('hex')}`;
}

export interface TestAgent {
  id: string;
  token: string;
  client: BatonClient;
}

export async function newAgent(
  prefix: string, options: { capabilities?: string[]; maxConcurrent?: number } = {},
): Promise<TestAgent> {
  const id = uniqueId(prefix);
  const { token } = await admin.createAgent({ id, ...options });
  return { id, token, client: createBatonClient({ url: stack.SUPABASE_URL, ...agentKey(stack), token }) };
}

/** A client without the generated schema types, for calls the types would refuse (the database must too). */
export const untyped = (db: BatonDb) => db as unknown as SupabaseClient;

/**
 * A pool of the project's `postgres` role (BYPASSRLS, no superuser, as on hosted), to check what is
 * stored without going through RLS; closed after the file. `{ superuser: true }` for what only the
 * cluster's superuser may do (its catalogue).
 */
export function database({ superuser = false } = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: superuser ? inject('adminUrl') : stack.DATABASE_URL, max: 4 });
  afterAll(() => pool.end());
  return pool;
}

/**
 * The database's own clock now (clock_timestamp()), in ms. A time the database stamped lies between two
 * of these taken around the call: a check with no bound on how long the call took.
 */
export async function databaseNow(url: string = stack.DATABASE_URL): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: [row] } = await client.query<{ now: Date }>('select clock_timestamp() as now');
    return row!.now.getTime();
  } finally {
    await client.end();
  }
}

/** Asserts that `stamped` (a time the database wrote) lies between `before` and `after` (databaseNow). */
export function expectStampedBetween(stamped: string | Date, before: number, after: number): void {
  const at = new Date(stamped).getTime();
  expect(at).toBeGreaterThanOrEqual(before);
  expect(at).toBeLessThanOrEqual(after);
}

/** The error a promise rejects with, asserting it is a BatonError with `code`. */
export async function refusal(promise: Promise<unknown>, code: string): Promise<BatonError> {
  const err = await promise.then(
    () => { throw new Error(`expected a refusal with ${code}, but the call succeeded`); },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BatonError);
  expect((err as BatonError).code, (err as BatonError).message).toBe(code);
  return err as BatonError;
}

/** Hands a task from `from` to `to`, has `to` claim and start it. */
export async function runningTask(from: TestAgent, to: TestAgent, title = 'work'): Promise<Task> {
  const task = await from.client.handoff({ to: to.id, title });
  return to.client.claim(task.id, { start: true });
}
