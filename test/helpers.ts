import crypto from 'node:crypto';
import pg from 'pg';
import { afterAll, expect, inject } from 'vitest';
import { createAdminClient } from '../src/client/admin.js';
import { createBatonClient, type BatonClient } from '../src/client/agent.js';
import { BatonError } from '../src/errors.js';
import type { Task } from '../src/schemas.js';

export const stack = inject('stack');
export const admin = createAdminClient({
  url: stack.SUPABASE_URL, serviceRoleKey: stack.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: stack.SUPABASE_JWT_SECRET,
});

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
  return { id, token, client: createBatonClient({ url: stack.SUPABASE_URL, anonKey: stack.SUPABASE_ANON_KEY, token }) };
}

/** A superuser pool, to check what is stored without going through RLS; closed after the file. */
export function database(): pg.Pool {
  const pool = new pg.Pool({ connectionString: stack.DATABASE_URL, max: 4 });
  afterAll(() => pool.end());
  return pool;
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
