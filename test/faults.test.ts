/**
 * The protocol under a faulty network (test/fault-run.ts): four daemons, each behind a proxy that
 * delays, resets, blackholes, drops answers, cuts them, or leaves connections half-open, on a seeded
 * schedule with a successor started while its agent's process is cut off, a claim made by hand beside
 * a daemon, and a process killed while partitioned; then the network heals and the history is checked.
 * Three seeds in a row; BATON_FAULT_SEEDS=1,2,3 replays given ones.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { FaultProxy } from './fault-proxy.js';
import { runFaults } from './fault-run.js';
import { ownStack } from './own-stack.js';

const own = ownStack('faults');
const seeds = process.env.BATON_FAULT_SEEDS?.split(',').map(Number) ?? [0, 1, 2].map((i) => (Date.now() + i * 7919) % 1_000_000);
const scheduleSeconds = Number(process.env.BATON_FAULT_SECONDS ?? 30);
let db: pg.Pool;
let work: string;
beforeAll(() => {
  db = new pg.Pool({ connectionString: own.env.DATABASE_URL, max: 4 });
  db.on('error', () => undefined);
  // BATON_FAULT_KEEP=<folder> keeps the daemons' logs and the runs file there, to read a failure.
  work = process.env.BATON_FAULT_KEEP ?? fs.mkdtempSync(path.join(own.dir, 'faults-'));
});
afterAll(() => db?.end());

describe('a faulty network between the daemons and the API', () => {
  for (const seed of seeds) {
    it(`loses no task, runs none twice at once, and recovers after the heal (seed ${seed})`, async () => {
      const report = await runFaults({ env: own.env, db, admin: own.admin, work, seed, scheduleSeconds, say: (l) => console.log(l) });
      console.log(JSON.stringify({ ...report, errorLines: report.errorLines.slice(0, 20) }, null, 1));
      expect(report.violations, `seed ${seed} (BATON_FAULT_SEEDS=${seed} replays it)`).toEqual([]);
      expect(report.completed).toBeGreaterThan(report.tasks / 2);
    }, (scheduleSeconds + 240) * 1000);
  }
});

/**
 * `baton agent run` as its own process behind a FaultProxy of its own, with `config` (written to a
 * file); `stop()` ends both. Its output, stdout and stderr, is kept.
 */
async function daemonBehindProxy(token: string, config: Record<string, unknown>) {
  const api = new URL(own.env.SUPABASE_URL);
  const proxy = new FaultProxy({ host: api.hostname, port: Number(api.port) });
  const port = await proxy.listen();
  const file = path.join(work, `daemon-${port}.json`);
  fs.writeFileSync(file, JSON.stringify({ poll: '* * * * * *', heartbeat: '*/2 * * * * *', ...config }));
  const daemon = { proxy, output: '', stop: async () => undefined as unknown };
  const child = spawn(process.execPath, [cliPath, 'agent', 'run', '--config', file], {
    env: { ...process.env, SUPABASE_URL: `http://127.0.0.1:${port}`, SUPABASE_ANON_KEY: own.env.SUPABASE_ANON_KEY, SUPABASE_PUBLISHABLE_KEY: '', BATON_AGENT_TOKEN: token, LOG_LEVEL: 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => { daemon.output += c; });
  child.stderr!.on('data', (c: Buffer) => { daemon.output += c; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  daemon.stop = async () => {
    child.kill('SIGTERM');
    await exited;
    await proxy.close();
  };
  await eventually(async () => /agent started/.test(daemon.output), 30_000, 'the daemon to start');
  return daemon;
}

describe('a daemon whose connections die without a word (half-open)', () => {
  it('reports what it held and claims again within seconds of the heal, logging JSON lines only', async () => {
    const boss = await own.newAgent('ho-boss');
    const bot = await own.newAgent('ho-bot');
    const daemon = await daemonBehindProxy(bot.token, {
      executors: { '*': { command: 'cat > /dev/null; sleep 1; echo \'{"status": "success"}\'' } },
    });
    try {
      const held = await boss.client.handoff({ to: bot.id, title: 'held across a half-open network', leaseSeconds: 60 });
      await eventually(async () => (await boss.client.getTask(held.id)).status === 'in_progress', 20_000, 'the task to start');
      // Every connection open now, and every one made in the next 3 s, dies silently, for good.
      daemon.proxy.set('half-open');
      await new Promise((r) => setTimeout(r, 3000));
      daemon.proxy.set('pass');
      // Before every request had a deadline, the daemon waited 300 s (undici's default) on dead connections.
      await eventually(async () => (await boss.client.getTask(held.id)).status === 'completed', 60_000, 'the outcome held across the fault to be recorded');
      const next = await boss.client.handoff({ to: bot.id, title: 'after the heal' });
      await eventually(async () => (await boss.client.getTask(next.id)).status === 'completed', 60_000, 'the daemon to claim again');
    } finally {
      await daemon.stop();
    }
    const lines = daemon.output.split('\n').filter(Boolean);
    const notJson = lines.filter((l) => { try { JSON.parse(l); return false; } catch { return true; } });
    expect(notJson, 'lines that are not JSON').toEqual([]);
    // One error when the outage began, at most, not one per call or per second.
    const errors = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((e) => e.level >= 50);
    expect(errors.length, JSON.stringify(errors)).toBeLessThanOrEqual(2);
  });
});

describe('a question asked before the API goes away', () => {
  // The outage lasts as a stack restart does (longer than a request may wait): the daemon's polls for
  // the answer fail. On a 5 s lease it also outlasts the claim's lease: the database holds a running
  // task's claim that long unheard, but a task waiting for its answer does not lapse.
  it.each<[string, number | undefined]>([
    ['is answered into the same run once the API is back: one attempt, one question', undefined],
    ['keeps its run through an outage longer than the claim\'s lease: a question waiting does not lapse', 5],
  ])('%s', async (_, leaseSeconds) => {
    const boss = await own.newAgent('q-boss');
    const bot = await own.newAgent('q-bot');
    const module = path.join(work, `asker-${bot.id}.mjs`);
    fs.writeFileSync(module, 'export default async (task, ctx) => ({ status: "success", summary: `answered: ${await ctx.ask("tabs or spaces?")}` });\n');
    const daemon = await daemonBehindProxy(bot.token, { executors: { '*': { module } } });
    try {
      const task = await boss.client.handoff({ to: bot.id, title: 'asks, then the API goes away', leaseSeconds });
      await eventually(async () => (await boss.client.getTask(task.id)).status === 'input_required', 30_000, 'the question');
      // The API away for the daemon (a stack restarted, an upgrade), while the sender answers.
      daemon.proxy.set('reset');
      await new Promise((r) => setTimeout(r, 15_000));
      await boss.client.answer(task.id, 'spaces');
      daemon.proxy.set('pass');
      const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return ['completed', 'failed'].includes(t.status) ? t : undefined; }, 60_000, 'the task to end');
      expect(done.status, done.status_reason ?? '').toBe('completed');
      expect(done.result?.summary).toBe('answered: spaces');
      expect(done.attempts).toBe(1);
      expect(await boss.client.messages({ taskId: task.id, kind: 'question' })).toHaveLength(1);
      expect(daemon.output).not.toContain('could not confirm the claim');
    } finally {
      await daemon.stop();
      if (process.env.BATON_FAULT_DEBUG) console.log(daemon.output);
    }
  }, 150_000);
});

describe('an outcome whose answer was lost', () => {
  it('is said to be recorded by the earlier try, not refused', async () => {
    const boss = await own.newAgent('lost-boss');
    const bot = await own.newAgent('lost-bot');
    const go = path.join(work, `go-${bot.id}`);
    const daemon = await daemonBehindProxy(bot.token, {
      push: false,
      executors: { '*': { command: `cat > /dev/null; while [ ! -f ${go} ]; do sleep 0.05; done; echo '{"status": "success"}'` } },
    });
    try {
      const task = await boss.client.handoff({ to: bot.id, title: 'reported into the void', leaseSeconds: 60 });
      await eventually(async () => (await boss.client.getTask(task.id)).status === 'in_progress', 20_000, 'the task to start');
      // The report reaches the database and commits; its answer never comes back.
      daemon.proxy.set('drop-responses');
      fs.writeFileSync(go, '');
      await eventually(async () => (await boss.client.getTask(task.id)).status === 'completed', 20_000, 'the report to commit');
      daemon.proxy.set('pass');
      await eventually(async () => /recorded by an earlier try, whose answer was lost/.test(daemon.output), 30_000, 'the daemon to learn its outcome was recorded');
      expect(daemon.output).not.toMatch(/late outcome refused/);
    } finally {
      await daemon.stop();
    }
  });
});
