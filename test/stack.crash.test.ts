/**
 * Daemons outlive their database. A Postgres outage under working daemons loses no reported outcome
 * and runs no task twice (outcomes are retried with their claim token until the database answers), and
 * a Postgres killed with SIGKILL is started again by the stack itself, with no daemon restarted. A
 * stack of its own, since its database goes away.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createAgent, type BatonAgent } from '../src/agent/daemon.js';
import { stackHealth } from '../src/stack/background.js';
import { stackPaths } from '../src/stack/paths.js';
import { readRuntimeFile, writeRuntime } from '../src/stack/state.js';
import { eventually } from './daemon-helpers.js';
import { agentKey } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const own = ownStack('crash');

/** Three working daemons that count how often each task ran, with their log lines. */
async function workers(capability: string, workMs: number) {
  const runs = new Map<string, number>();
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
  const daemons: BatonAgent[] = [];
  for (let i = 0; i < 3; i += 1) {
    const agent = await own.newAgent(`worker-${i}`, { capabilities: [capability], maxConcurrent: 2 });
    daemons.push(createAgent({
      url: own.env.SUPABASE_URL, ...agentKey(own.env), token: agent.token, poll: '* * * * * *', heartbeat: '*/2 * * * * *',
      log: pino({ level: 'debug' }, sink),
      executors: {
        '*': async (task) => {
          runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
          await sleep(workMs);
          return { status: 'success' };
        },
      },
    }));
  }
  await Promise.all(daemons.map((d) => d.start()));
  return { runs, lines, stop: () => Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 }))) };
}

describe('a database that goes away', () => {
  it('loses no outcome reported during a 3-second outage, and runs no task twice', async () => {
    const capability = `outage-${Date.now()}`;
    const sender = await own.newAgent('sender');
    const { runs, lines, stop } = await workers(capability, 1500);
    try {
      const tasks = await sender.client.handoffMany(Array.from({ length: 12 }, (_, i) => ({ title: `outage ${i}`, requiredCapabilities: [capability] })));
      const ids = tasks.map((t) => t.task_id!);
      // Every slot busy: the outcomes of these six come due while the database is away.
      await eventually(async () => runs.size >= 6, 30_000, 'six tasks to start');
      await own.database.stop();
      await sleep(3000);
      await own.database.start();
      const done = await eventually(async () => {
        const states = await Promise.all(ids.map((id) => sender.client.getTask(id)));
        return states.every((t) => t.status === 'completed') && states;
      }, 60_000, 'every task to complete');
      expect(lines.filter((l) => /^could not reach the API to report the task/.test(String(l.msg))).length,
        'some outcome met the outage').toBeGreaterThan(0);
      expect(lines.filter((l) => /^could not report the task/.test(String(l.msg)))).toEqual([]);
      expect(done.map((t) => t.attempts)).toEqual(ids.map(() => 1));
      expect([...runs.values()]).toEqual(ids.map(() => 1));
    } finally {
      await stop();
    }
  }, 120_000);

  it('is started again by the stack after SIGKILL, and the same daemons go on working', async () => {
    const capability = `crash-${Date.now()}`;
    const sender = await own.newAgent('sender');
    const { runs, stop } = await workers(capability, 50);
    try {
      const before = await sender.client.broadcast({ title: 'before the crash', requiredCapabilities: [capability] });
      await eventually(async () => (await sender.client.getTask(before.id)).status === 'completed', 30_000, 'the first task');
      const postmaster = Number(fs.readFileSync(path.join(stackPaths(own.dir).pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGKILL');
      await eventually(async () => {
        const health = await stackHealth(own.dir);
        return health.api && health.database && health.runtime?.postgresPid !== postmaster;
      }, 30_000, 'the stack to start Postgres again');
      const after = await sender.client.handoffMany(Array.from({ length: 5 }, (_, i) => ({ title: `after the crash ${i}`, requiredCapabilities: [capability] })));
      await eventually(async () => {
        const states = await Promise.all(after.map((t) => sender.client.getTask(t.task_id!)));
        return states.every((t) => t.status === 'completed');
      }, 60_000, 'the tasks handed off after the crash');
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await stop();
    }
  }, 120_000);
});

describe('the stack\'s runtime file', () => {
  it('is replaced in one step, and a half-written one reads as no stack yet rather than an error', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-runtime-'));
    try {
      const file = stackPaths(dir).runtime;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      // What a reader met while an older stack wrote the file in place.
      for (const torn of ['', '{"pid": 12', '{"pid": 1}\n{']) {
        fs.writeFileSync(file, torn);
        expect(readRuntimeFile(dir), JSON.stringify(torn)).toBeUndefined();
      }
      const runtime = { pid: process.pid, apiPort: 1, dbPort: 2, postgrestPort: 3, startedAt: new Date().toISOString() };
      writeRuntime(dir, runtime);
      expect(readRuntimeFile(dir)).toEqual(runtime);
      expect(fs.readdirSync(path.dirname(file)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
