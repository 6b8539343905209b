/**
 * The README's five-minute tour, run as written by bash in an empty folder inside the clone (where
 * `npx baton` is this package's CLI), with the stack on free ports instead of the default ones.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/stack/ports.js';
import { removeStackFolder } from './global-setup.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, timeout: 240_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) || 1 : 0, out: stdout + stderr }));
  });
}

describe('the README\'s tour', () => {
  it('runs as written: two agents, a hand-off, a claim, progress, a completion, and the task followed to its end', async () => {
    const tour = /## A five-minute tour[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(tour, 'the tour\'s shell block').toBeDefined();
    const dir = fs.mkdtempSync(path.join(root, '.tour-'));
    fs.chmodSync(dir, 0o755);
    const apiPort = await freePort();
    const env = { ...process.env, BATON_API_PORT: String(apiPort), BATON_DB_PORT: String(await freePort([apiPort])), NO_COLOR: '1' };
    try {
      const ran = await bash(tour!, dir, env);
      expect(ran.code, ran.out).toBe(0);
      expect(ran.out).toMatch(/Handed off [0-9a-f]{8} "Write a slugify function"/);
      expect(ran.out).toMatch(/Completed [0-9a-f]{8} "Write a slugify function"/);
      expect(ran.out).toMatch(/Stack stopped/);
    } finally {
      await bash('npx baton stack stop || true', dir, env);
      removeStackFolder(dir);
    }
    // A stack's start and a dozen npx calls: a minute on a quiet machine, more beside other work.
  }, 240_000);
});
