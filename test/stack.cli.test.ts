/** `baton stack …` as a user runs it: a background stack that keeps its data and says what is wrong. */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, projectRoot } from '../src/config.js';
import { freePort } from '../src/stack/ports.js';
import { isAlive, readRuntime } from '../src/stack/state.js';
import { makeStackDir } from './global-setup.js';
import { baton } from './cli.js';

describe('baton stack', async () => {
  const dir = makeStackDir('baton-cli-stack-');
  const apiPort = await freePort();
  const dbPort = await freePort([apiPort]);
  const at = ['--dir', dir, '--api-port', String(apiPort), '--db-port', String(dbPort)];

  afterAll(async () => {
    const runtime = readRuntime(dir);
    if (runtime) await baton(['stack', 'stop', '--dir', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('starts in the background and returns once the API answers', async () => {
    const started = await baton(['stack', 'start', ...at, '--json']);
    expect(started.code, started.stderr).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ running: true, alreadyRunning: false, apiPort, dbPort });
    const res = await fetch(`http://127.0.0.1:${apiPort}/rest/v1/`, { headers: { apikey: 'wrong' } });
    expect(res.status).toBe(401);
  });

  it('says so, and exits 0, when started while running', async () => {
    const again = await baton(['stack', 'start', ...at]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already running/);
  });

  it('prints the settings agents need as KEY=VALUE lines', async () => {
    const { stdout, code } = await baton(['stack', 'env', '--dir', dir]);
    expect(code).toBe(0);
    const env = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split(/=(.*)/s).slice(0, 2)));
    expect(Object.keys(env).sort()).toEqual(['BATON_SIGNING_KEY', 'DATABASE_URL', 'SUPABASE_ANON_KEY', 'SUPABASE_JWT_SECRET', 'SUPABASE_PUBLISHABLE_KEY', 'SUPABASE_SECRET_KEY', 'SUPABASE_SERVICE_ROLE_KEY', 'SUPABASE_URL']);
    expect(env.SUPABASE_URL).toBe(`http://127.0.0.1:${apiPort}`);
  });

  it('writes the settings to a file only its owner may read, and every command below its folder reads it', async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-project-'));
    try {
      const file = path.join(project, '.env');
      const written = await baton(['stack', 'env', '--dir', dir, '--write-env', file]);
      expect(written.code, written.stderr).toBe(0);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(file, 'utf8')).toContain(`SUPABASE_URL=http://127.0.0.1:${apiPort}`);
      // A file already there is left as it is.
      fs.writeFileSync(file, 'KEPT=1\n');
      expect((await baton(['stack', 'env', '--dir', dir, '--write-env', file])).code).toBe(2);
      expect(fs.readFileSync(file, 'utf8')).toBe('KEPT=1\n');
      fs.rmSync(file);
      await baton(['stack', 'env', '--dir', dir, '--write-env', file]);
      // From a folder two levels down, as git finds its repository.
      const deeper = path.join(project, 'src', 'lib');
      fs.mkdirSync(deeper, { recursive: true });
      const health = await baton(['health'], {}, deeper);
      expect(health.code, health.stderr).toBe(0);
      expect(health.stdout).toContain(`http://127.0.0.1:${apiPort} answers`);
    } finally {
      fs.rmSync(project, { recursive: true, force: true });
    }
  });

  it('finds its project as git does, passing by a .env that is not Baton\'s', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-home-'));
    try {
      fs.writeFileSync(path.join(home, '.env'), 'SOME_OTHER_TOOL=1\n');
      const work = path.join(home, 'work', 'deep');
      fs.mkdirSync(work, { recursive: true });
      expect(projectRoot(work)).toBe(work); // nothing of Baton's above: the working folder
      fs.mkdirSync(path.join(home, 'work', '.baton'));
      expect(projectRoot(work)).toBe(path.join(home, 'work'));
      expect(loadConfig({}, { cwd: work, env: {} }).stackDir).toBe(path.join(home, 'work', '.baton', 'stack'));
      fs.writeFileSync(path.join(work, '.env'), 'BATON_AGENT_TOKEN=t\n');
      expect(projectRoot(work)).toBe(work);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('keeps every agent and task across stop and start', async () => {
    const created = await baton(['agent', 'create', 'keeper', '--capabilities', 'memory', '--json', '--dir', dir]);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id: 'keeper', token: expect.any(String) });

    const stopped = await baton(['stack', 'stop', '--dir', dir]);
    expect(stopped.code).toBe(0);
    expect(readRuntime(dir)).toBeUndefined();
    const status = await baton(['stack', 'status', '--dir', dir, '--json']);
    expect(status.stdout).toMatch(/"running": false/);
    // Not running is exit 3, as service managers' status commands say it: `status || start` works.
    expect(status.code).toBe(3);
    const said = await baton(['stack', 'status', '--dir', dir]);
    expect(said.stdout).toContain(`start it with: baton stack start --dir ${dir}`);

    expect((await baton(['stack', 'start', ...at])).code).toBe(0);
    const listed = await baton(['agent', 'list', '--json', '--dir', dir]);
    expect(JSON.parse(listed.stdout).map((a: { id: string }) => a.id)).toContain('keeper');
  });

  it('recovers from a crash of the stack process, reclaiming what it left running', async () => {
    const before = readRuntime(dir)!;
    process.kill(before.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    expect(readRuntime(dir)).toBeUndefined();
    const restarted = await baton(['stack', 'start', ...at]);
    expect(restarted.code, restarted.stderr).toBe(0);
    expect(isAlive(before.postgrestPid!)).toBe(false);
    const listed = await baton(['agent', 'list', '--json', '--dir', dir]);
    expect(JSON.parse(listed.stdout).map((a: { id: string }) => a.id)).toContain('keeper');
  });

  it('serves other hosts with --api-host 0.0.0.0, and prints its settings as they see it with --url', async () => {
    expect((await baton(['stack', 'stop', '--dir', dir])).code).toBe(0);
    // Stopped, the folder alone still gives the settings for a URL another host reaches it by.
    const seen = await baton(['stack', 'env', '--dir', dir, '--url', 'http://stack:54321/']);
    expect(seen.code, seen.stderr).toBe(0);
    expect(seen.stdout).toMatch(/^SUPABASE_URL=http:\/\/stack:54321$/m);
    expect(seen.stdout).toMatch(/^SUPABASE_SECRET_KEY=sb_secret_/m);
    expect(seen.stdout).not.toMatch(/DATABASE_URL/);
    expect((await baton(['stack', 'env', '--dir', dir])).code).toBe(1);

    const started = await baton(['stack', 'start', ...at, '--api-host', '0.0.0.0']);
    expect(started.code, started.stderr).toBe(0);
    const address = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    expect(address, 'a network interface other than loopback, to reach the stack by').toBeDefined();
    const res = await fetch(`http://${address}:${apiPort}/rest/v1/`, { headers: { apikey: 'wrong' } });
    expect(res.status).toBe(401);
    expect((await baton(['health', '--dir', dir])).stdout).toMatch(/^ok: http:\/\/127\.0\.0\.1:\d+ answers$/m);
  });

  it('stops whole when told twice at once, as a second Ctrl-C or a repeating supervisor does', async () => {
    const running = readRuntime(dir)!;
    expect(isAlive(running.postgresPid!) && isAlive(running.postgrestPid!)).toBe(true);
    // Two at once, as a bench's harness sent them (its signal handler, then the exit it made): the
    // second once came while the first was acted on, and ended the process halfway, its Postgres left.
    process.kill(running.pid, 'SIGTERM');
    process.kill(running.pid, 'SIGTERM');
    const deadline = Date.now() + 60_000;
    while ([running.pid, running.postgresPid!, running.postgrestPid!].some(isAlive)) {
      if (Date.now() > deadline) expect.fail(`still running a minute after two SIGTERMs: ${[running.pid, running.postgresPid, running.postgrestPid].filter((pid) => isAlive(pid!)).join(', ')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(readRuntime(dir)).toBeUndefined();
  });

  it('names a port that is already taken', async () => {
    const blocker = net.createServer();
    const taken = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as net.AddressInfo).port)));
    const other = makeStackDir('baton-cli-taken-');
    try {
      const result = await baton(['stack', 'start', '--dir', other, '--api-port', String(taken), '--db-port', String(await freePort([taken]))]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`port ${taken} (API) is already in use`);
      expect(result.stderr).toContain('--api-port');
    } finally {
      blocker.close();
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it('explains what to do when no stack runs', async () => {
    const empty = makeStackDir('baton-cli-empty-');
    try {
      const env = await baton(['stack', 'env', '--dir', empty]);
      expect(env.code).toBe(1);
      expect(env.stderr).toMatch(/no stack is running .*baton stack start.*--url/);
      const list = await baton(['agent', 'list', '--dir', empty]);
      expect(list.code).toBe(2);
      expect(list.stderr).toMatch(/SUPABASE_URL is not set and no local stack is running/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it('prints its version and refuses unknown commands with exit code 2', async () => {
    const version = await baton(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect((await baton(['frobnicate'])).code).toBe(2);
  });
  it('checks the ports it is given and lists every option a stack command takes', async () => {
    const word = await baton(['stack', 'status', '--dir', dir, '--api-port', 'abc']);
    expect(word.code).toBe(2);
    expect(word.stderr).toContain('must be a port number from 1 to 65535, got "abc"');
    const same = await baton(['stack', 'start', '--dir', dir, '--api-port', '54999', '--db-port', '54999']);
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('the API port and the database port are both 54999');
    const help = await baton(['stack', 'start', '--help']);
    for (const option of ['--dir', '--api-port', '--db-port', '--api-host']) expect(help.stdout).toContain(option);
  });
});
