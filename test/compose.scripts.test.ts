/**
 * The compose project's two scripts, run on this host against a real stack (the whole project on a
 * Docker engine is `npm run compose:test`, too long for the suite): setup registers every agent once and
 * leaves each its settings file; the generic agents' entry gives each container one identity from the
 * pool, keeps it across a restart, and takes over the identity of a container that is gone.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { ownStack } from './own-stack.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const own = ownStack('compose-scripts');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-compose-scripts-'));
const tokens = path.join(work, 'tokens');
const bin = path.join(work, 'bin');

function run(script: string, args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(path.join(root, 'docker', script), args, {
      env: { PATH: `${bin}:${process.env.PATH}`, TOKENS_DIR: tokens, NO_COLOR: '1', ...env },
      timeout: 60_000,
    }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) || 1 : 0, out: stdout + stderr }));
  });
}

// Each test starts the CLI six or seven times through the scripts (about 0.7 s each here); on a loaded
// 2-core machine that passed the suite's 30 s once, so these have the scripts' own minute and more.
const SCRIPTS_TIMEOUT = 90_000;

describe('the compose scripts', () => {
  beforeAll(() => {
    // `baton` on the PATH, as the image has it.
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'baton'), `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`, { mode: 0o755 });
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('setup registers every agent once and leaves each its own settings file', async () => {
    const env = { STACK_DIR: own.dir, STACK_URL: own.env.SUPABASE_URL, BATON_WORKERS: '3' };
    const first = await run('setup.sh', [], env);
    expect(first.code, first.out).toBe(0);
    const files = ['lead.env', 'researcher.env', 'coder.env', 'auditor.env', 'workers/worker-1.env', 'workers/worker-2.env', 'workers/worker-3.env'];
    for (const file of files) {
      const full = path.join(tokens, file);
      expect(fs.statSync(full).mode & 0o777, file).toBe(0o600);
      const text = fs.readFileSync(full, 'utf8');
      expect(text).toMatch(/^BATON_AGENT_TOKEN=ey/m);
      expect(text).toMatch(/^SUPABASE_PUBLISHABLE_KEY=sb_publishable_/m);
      expect(text).not.toMatch(/SECRET|SIGNING/);
    }
    const before = fs.readFileSync(path.join(tokens, 'coder.env'), 'utf8');
    const again = await run('setup.sh', [], env);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toMatch(/coder: registered before/);
    expect(fs.readFileSync(path.join(tokens, 'coder.env'), 'utf8')).toBe(before);
    expect((await own.admin.listAgents()).map((a) => a.id).sort()).toEqual(['auditor', 'coder', 'lead', 'researcher', 'worker-1', 'worker-2', 'worker-3']);
  }, SCRIPTS_TIMEOUT);

  it('gives each container one identity, the same one after a restart, and a gone container\'s to the next', async () => {
    const as = async (host: string) => run('worker.sh', ['health'], { HOSTNAME: host });
    const a = await as('container-a');
    expect(a.code, a.out).toBe(0);
    expect(a.out).toMatch(/container-a\) acts as worker-1\nok: .* accepts the agent token/);
    expect((await as('container-b')).out).toMatch(/acts as worker-2/);
    expect((await as('container-a')).out).toMatch(/acts as worker-1/); // restarted: its own again
    expect((await as('container-c')).out).toMatch(/acts as worker-3/);
    const full = await as('container-d');
    expect(full.code).toBe(1);
    expect(full.out).toMatch(/no free identity/);

    // container-b is gone: its lock has not been touched for two minutes.
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(path.join(tokens, 'workers', 'worker-2.lock'), old, old);
    const d = await as('container-d');
    expect(d.code, d.out).toBe(0);
    expect(d.out).toMatch(/container-d\) acts as worker-2/);
    expect(fs.readFileSync(path.join(tokens, 'workers', 'worker-2.lock', 'holder'), 'utf8').trim()).toBe('container-d');
  }, SCRIPTS_TIMEOUT);
});
