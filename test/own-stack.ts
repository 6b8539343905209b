/**
 * A stack of a test file's own, for tests whose agents would claim other files' work (or whose work
 * other files' agents would claim) on the shared one: capability-free broadcasts, claim-next at random.
 */
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import type { AdminClient } from '../src/client/admin.js';
import { createBatonClient } from '../src/client/agent.js';
import { adminFor, agentKey } from './keys-mode.js';
import { startStack, type Stack } from '../src/stack/index.js';
import { freePort } from '../src/stack/ports.js';
import type { StackEnv } from '../src/stack/state.js';
import { makeStackDir } from './global-setup.js';
import { uniqueId, type TestAgent } from './helpers.js';

export interface OwnStack {
  /** The stack's folder (its secrets and data). */
  dir: string;
  env: StackEnv;
  /** The cluster's superuser, for the few checks that must reach past what `postgres` may do. */
  adminUrl: string;
  admin: AdminClient;
  /** The stack's gateway, to stop and start again. */
  gateway: Stack['gateway'];
  /** The stack's Postgres, to stop (an outage) and start again. */
  database: Stack['database'];
  newAgent(prefix: string, options?: { capabilities?: string[]; maxConcurrent?: number }): Promise<TestAgent>;
}

/**
 * Starts a stack before the file's tests and stops it after; read `dir`, `env` and `admin` inside tests.
 * Its Realtime keeps the plan given (by default Free's, as a newcomer's stack does).
 * Its folder is made then too, so a run that filters the file's tests out leaves none behind.
 */
export function ownStack(prefix: string, { realtimePlan }: { realtimePlan?: string } = {}): OwnStack {
  let stack: Stack | undefined;
  const own = {
    dir: '',
    env: undefined as unknown as StackEnv,
    adminUrl: '',
    admin: undefined as unknown as AdminClient,
    gateway: undefined as unknown as Stack['gateway'],
    database: undefined as unknown as Stack['database'],
    async newAgent(agentPrefix: string, options: { capabilities?: string[]; maxConcurrent?: number } = {}): Promise<TestAgent> {
      const id = uniqueId(agentPrefix);
      const { token } = await own.admin.createAgent({ id, ...options });
      return { id, token, client: createBatonClient({ url: own.env.SUPABASE_URL, ...agentKey(own.env), token }) };
    },
  };
  beforeAll(async () => {
    own.dir = makeStackDir(`baton-${prefix}-`);
    const apiPort = await freePort();
    stack = await startStack({ dir: own.dir, apiPort, dbPort: await freePort([apiPort]), realtimePlan });
    own.env = stack.env;
    own.adminUrl = stack.adminUrl;
    own.gateway = stack.gateway;
    own.database = stack.database;
    own.admin = adminFor(stack.env);
  });
  afterAll(async () => {
    await stack?.stop();
    if (own.dir) fs.rmSync(own.dir, { recursive: true, force: true });
  });
  return own;
}
