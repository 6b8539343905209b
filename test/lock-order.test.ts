/**
 * Every RPC that touches claims, run against the others in tight parallel loops (as pgbench would):
 * renewals, reports, reports that claim along, claims, releases, progress, questions, cancels,
 * reassignments, sweeps and restarts of an agent. One lock order means no deadlock (40P01), no
 * serialization failure (40001), no lock timeout (55P03) and no 5xx: only Baton's own refusals.
 *
 * BATON_LOCK_LOOP_SECONDS sets how long the loops run (a minute by default).
 */
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createAgent } from '../src/agent/daemon.js';
import type { BatonClient, Outcome } from '../src/client/agent.js';
import type { Task } from '../src/schemas.js';
import { eventually, fast } from './daemon-helpers.js';
import { ownStack } from './own-stack.js';
import type { TestAgent } from './helpers.js';
import { agentKey } from './keys-mode.js';

const own = ownStack('lock-order');
const seconds = Number(process.env.BATON_LOCK_LOOP_SECONDS ?? 60);

/** A small deterministic generator, so a run can be told apart from another by its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe('one lock order', () => {
  it(`runs the claim RPCs against each other for ${seconds} s without a deadlock, serialization failure, lock timeout or 5xx`, async () => {
    const seed = Number(process.env.BATON_SEED ?? Date.now() % 1_000_000);
    console.log(`lock-order seed: ${seed} (BATON_SEED=${seed} replays the schedule)`);
    const rand = random(seed);
    const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(rand() * items.length)];
    const shuffle = <T>(items: T[]): T[] => items.map((x) => [rand(), x] as const).sort((a, b) => a[0] - b[0]).map(([, x]) => x);

    const sender = await own.newAgent('lo-sender', { maxConcurrent: 50 });
    const holders = await Promise.all([0, 1, 2].map(() => own.newAgent('lo-holder', { maxConcurrent: 25 })));
    const sent: string[] = [];
    const wrong: string[] = [];
    const counts = new Map<string, number>();
    const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
    const record = (what: string) => (err: unknown) => {
      const code = (err as { code?: string }).code ?? '';
      count(`${what} refused ${code}`);
      // Baton's own refusals are answers; anything else is what this test exists to catch.
      if (!/^BT\d{3}$/.test(code)) wrong.push(`${what}: ${code} ${(err as Error).message}`);
    };
    const until = Date.now() + seconds * 1000;
    const loop = async (what: string, step: () => Promise<unknown>) => {
      while (Date.now() < until) {
        await step().then(() => count(what), record(what));
        // A step with nothing to do answers at once: yield, so that the others' answers are read.
        await new Promise((r) => setImmediate(r));
      }
    };
    const held = async (client: BatonClient): Promise<Task[]> =>
      client.listTasks({ box: 'mine', status: ['claimed', 'in_progress'], limit: 100 });
    const outcome = (task: Task): Outcome => {
      const r = rand();
      if (r < 0.6) return { taskId: task.id, claimToken: task.claim_token, result: { status: 'success', summary: 'done' } };
      return { taskId: task.id, claimToken: task.claim_token, error: 'failed once', retry: r < 0.9 };
    };

    const holderLoops = (h: TestAgent, i: number) => [
      // A daemon's reporter: outcomes of some held tasks, claiming along.
      loop('report_and_claim', async () => {
        const mine = shuffle(await held(h.client)).slice(0, 1 + Math.floor(rand() * 6));
        await h.client.reportAndClaim(mine.map(outcome), { claim: 1 + Math.floor(rand() * 5), leaseSeconds: 5 });
      }),
      // A daemon's heartbeat: every held claim renewed, in any order.
      loop('check_claims renew', async () => {
        const mine = shuffle(await held(h.client));
        await h.client.checkClaims(mine.map((t) => ({ taskId: t.id, claimToken: t.claim_token! })), { renew: true });
      }),
      loop('claim_next_tasks', () => h.client.claimNext({ limit: 1 + Math.floor(rand() * 4), start: rand() < 0.7, leaseSeconds: 5 })),
      loop('holder calls', async () => {
        const task = pick(await held(h.client));
        if (!task) return new Promise((r) => setTimeout(r, 50));
        const r = rand();
        if (r < 0.3) await h.client.release(task.id, task.claim_token, 'handing it back');
        else if (r < 0.6) await h.client.progress(task.id, 'working', Math.floor(rand() * 100));
        else if (r < 0.75 && task.status === 'claimed') await h.client.start(task.id, task.claim_token);
        else if (r < 0.85) await h.client.ask(task.id, 'which one?');
        else await h.client.complete(task.id, task.claim_token);
      }),
      // Now and then the agent restarts: every claim it held goes back at once.
      ...(i === 0 ? [loop('begin_incarnation', async () => {
        await new Promise((r) => setTimeout(r, 1500));
        await h.client.beginIncarnation();
      })] : []),
    ];

    await Promise.all([
      loop('handoff_tasks', async () => {
        const made = await sender.client.handoffMany(Array.from({ length: 10 }, (_, n) => ({
          to: n % 4 === 3 ? null : pick(holders)!.id, title: `contended ${n}`, maxAttempts: 3,
        })));
        for (const m of made) if (m.task_id) sent.push(m.task_id);
        if (sent.length > 2000) sent.splice(0, 1000);
      }),
      loop('sender calls', async () => {
        // The newest ones: most older ones are final by now.
        const id = pick(sent.slice(-60));
        if (!id) return new Promise((r) => setTimeout(r, 50));
        const r = rand();
        if (r < 0.4) await sender.client.cancel(id, 'no longer needed');
        else if (r < 0.7) await sender.client.reassign(id, pick(holders)!.id, 'rebalance');
        else await sender.client.answer(id, 'the first one');
      }),
      loop('sweep_tasks', () => sender.client.sweep()),
      ...holders.flatMap(holderLoops),
    ]);

    console.log(Object.fromEntries([...counts].sort()));
    expect(wrong).toEqual([]);
    // The loops did contend: reports, renewals and claims went through many times each.
    for (const what of ['report_and_claim', 'check_claims renew', 'claim_next_tasks', 'handoff_tasks', 'sweep_tasks']) {
      expect(counts.get(what) ?? 0, what).toBeGreaterThan(10);
    }
  }, (seconds + 120) * 1000);
});

describe('a deadlock is transient', () => {
  it('retries an outcome the database undid with 40P01 (a deadlock), with its claim token, until it is recorded', async () => {
    const sender = await own.newAgent('dl-sender');
    const holder = await own.newAgent('dl-holder');
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => { finish = resolve; });
    // Only this test's task waits at the gate: the open work the loops above left runs straight through.
    let gated = '';
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    const agent = createAgent({
      // An hourly heartbeat: no lease renewal waits on the locked task beside the report.
      url: own.env.SUPABASE_URL, ...agentKey(own.env), token: holder.token, ...fast, heartbeat: '0 0 * * * *', push: false,
      log: pino({ level: 'debug' }, sink),
      // The gated task fails: a failure is reported one by one, so its deadlock comes back to the client
      // (a batch of plain completions falls back to one by one inside the database instead).
      executors: {
        '*': async (t) => {
          if (t.id !== gated) return { status: 'success', summary: 'done' };
          await gate;
          throw new Error('failed on purpose');
        },
      },
    });
    // The superuser: only it may lengthen its own deadlock_timeout.
    const db = new pg.Client({ connectionString: own.adminUrl });
    await db.connect();
    try {
      await agent.start();
      const task = await sender.client.handoff({ to: holder.id, title: 'reported into a deadlock', runAt: new Date(Date.now() + 1000).toISOString() });
      gated = task.id;
      await eventually(async () => (await sender.client.getTask(task.id)).status === 'in_progress', 20_000, 'the task to start');
      // Another transaction holds the task; the report locks the holder's row, then waits for the task.
      await db.query('begin');
      await db.query('set local deadlock_timeout = \'30s\'');  // the report's backend detects the cycle, and is undone
      await db.query('select from public.task_handoffs where id = $1 for update', [task.id]);
      finish();
      // PostgREST's statement is longer than pg_stat_activity keeps: any of its backends waiting on a lock
      // is the report (with an hourly heartbeat, no renewal is sent).
      // (pg_stat_activity is read once per transaction unless its snapshot is cleared.)
      await eventually(async () => {
        await db.query('select pg_stat_clear_snapshot()');
        return (await db.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'WITH pgrst_source%'`)).rowCount;
      }, 20_000, 'the report to wait for the task');
      // Now wait for the holder's row: a cycle, which Postgres breaks by undoing the report.
      await db.query('select from public.agents where id = $1 for no key update', [holder.id]);
      await db.query('rollback');
      const done = await eventually(async () => {
        const t = await sender.client.getTask(task.id);
        return t.status === 'failed' && t;
      }, 20_000, 'the outcome to be recorded');
      expect(done.status_reason).toMatch(/failed on purpose/);
      const retried = lines.find((l) => String(l.msg).includes('trying again'));
      expect(retried?.err).toMatchObject({ code: '40P01' });
      expect(lines.filter((l) => String(l.msg).startsWith('could not report'))).toEqual([]);
    } finally {
      await agent.stop({ graceSeconds: 0 });
      await db.end();
    }
  });
});
