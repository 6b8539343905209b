/** One real stack for the whole run, on free ports in a throwaway folder, always stopped. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startStack } from '../src/stack/index.js';
import { freePort } from '../src/stack/ports.js';
import type { StackEnv } from '../src/stack/state.js';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackEnv;
    /** The cluster's superuser, for the few checks that must reach past what `postgres` may do. */
    adminUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = makeStackDir('baton-test-');
  const apiPort = await freePort();
  // The files share this stack at a load no project has (floods of messages, hundreds of joins): no
  // quotas here. What a plan's quotas do is tested on stacks of their own (realtime.quotas.test.ts).
  const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]), realtimePlan: 'unlimited' });
  project.provide('stack', stack.env);
  project.provide('adminUrl', stack.adminUrl);
  return async () => {
    await stack.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

/** A throwaway folder that the postgres user can enter when the tests run as root. */
export function makeStackDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

/**
 * Removes a folder holding a stack, and the cluster its pgdata links to where there is one (as root,
 * a stack under a folder closed to the postgres user keeps its cluster in /var/lib/baton/clusters).
 */
export function removeStackFolder(dir: string): void {
  for (const stack of [dir, path.join(dir, '.baton', 'stack')]) {
    const pgdata = path.join(stack, 'pgdata');
    if (fs.lstatSync(pgdata, { throwIfNoEntry: false })?.isSymbolicLink()) {
      fs.rmSync(path.resolve(stack, fs.readlinkSync(pgdata)), { recursive: true, force: true });
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}
