/** The daemon in-process against the real stack: executors, retries, cancellation, questions, capacity, shutdown. */
import { describe, expect, it } from 'vitest';
import { RetryableError, UnavailableError } from '../src/agent/executors.js';
import type { Task } from '../src/schemas.js';
import { daemon, eventually } from './daemon-helpers.js';
import { database, newAgent, uniqueId } from './helpers.js';

const db = database();

/** The holder went quiet an hour ago and the leases of these tasks ran out: their claims have lapsed. */
async function goQuiet(agentId: string, taskIds: string[]): Promise<void> {
  await db.query(`update agents set last_heartbeat = now() - interval '1 hour' where id = $1`, [agentId]);
  await db.query(`update task_handoffs set lease_expires_at = now() - interval '1 second' where id = any($1)`, [taskIds]);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the agent daemon', () => {
  it('registers, runs a task with its handler, completes it, and tells the sender once', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const results: Task[] = [];
    await daemon(boss, { onResult: (task) => { results.push(task); } });
    const { instance } = await daemon(worker, {
      capabilities: ['math'], displayName: 'Worker', maxConcurrent: 3,
      executors: { sum: (task) => ({ status: 'success', summary: 'added', metrics: { sum: (task.payload.numbers as number[]).reduce((a, b) => a + b) } }) },
    });
    expect(await worker.client.agent(worker.id)).toMatchObject({ capabilities: ['math'], display_name: 'Worker', max_concurrent: 3, is_active: true });
    const task = await boss.client.handoff({ to: worker.id, title: 'add', payload: { task_type: 'sum', numbers: [1, 2, 3] } });
    const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'completed' && t; });
    expect(done.result).toMatchObject({ status: 'success', metrics: { sum: 6 } });
    await eventually(async () => results.length > 0, 10_000, 'onResult');
    await sleep(2500);
    expect(results.map((t) => t.id)).toEqual([task.id]);
    expect(instance.peers.map((p) => p.id)).toContain(boss.id);
  });

  it('tells the sender again after a pause when its handler failed, not at the next slow poll', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const calls: string[] = [];
    // Push is up, so the safety-net poll that used to be the only second chance is ten minutes away.
    const { lines } = await daemon(boss, {
      slowPollSeconds: 600,
      onResult: (task) => { calls.push(task.id); if (calls.length === 1) throw new Error('the gateway is restarting'); },
    });
    await daemon(worker, { executors: { '*': () => 'done' } });
    const task = await boss.client.handoff({ to: worker.id, title: 'told twice' });
    await eventually(async () => calls.length >= 2, 60_000, 'the result delivered again');
    expect(calls).toEqual([task.id, task.id]);
    expect(lines.find((l) => l.msg === 'onResult failed; it will run again')).toMatchObject({ taskId: task.id });
    const [result] = await boss.client.messages({ taskId: task.id, kind: 'result' });
    expect(result!.read_at).not.toBeNull();
  }, 120_000);

  it('claims nothing when it has no executors: it only sends work', async () => {
    const boss = await newAgent('boss');
    const sender = await newAgent('sender');
    await daemon(sender);
    const task = await boss.client.handoff({ to: sender.id, title: 'not for a sender' });
    await sleep(2500);
    expect((await boss.client.getTask(task.id)).status).toBe('pending');
  });

  it('rejects a task addressed to it that it has no executor for, naming the missing one, without using an attempt', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const { lines } = await daemon(worker, { executors: { code: () => 'ok', review: () => 'ok' } });
    const task = await boss.client.handoff({ to: worker.id, title: 'mystery', payload: { task_type: 'development' } });
    const rejected = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'rejected' && t; });
    expect(rejected.status_reason).toMatch(/no executor for task_type "development" \(its executors: code, review;/);
    expect(rejected.attempts).toBe(0);
    expect((await boss.client.events(task.id)).map((e) => e.to_status)).not.toContain('failed');
    const [result] = await boss.client.messages({ taskId: task.id, kind: 'result' });
    expect(result!.body).toMatchObject({ status: 'rejected' });
    expect(lines.find((l) => String(l.msg).startsWith('declined'))).toMatchObject({ taskId: task.id, reason: rejected.status_reason });
  });

  it('leaves a broadcast it cannot run for a capable peer and never claims it again', async () => {
    const capability = uniqueId('routing');
    const boss = await newAgent('boss');
    const generalist = await newAgent('generalist', { capabilities: [capability] });
    const specialist = await newAgent('specialist', { capabilities: [capability] });
    const { lines } = await daemon(generalist, { executors: { code: () => 'ok' } });
    const task = await boss.client.broadcast({ title: 'needs a designer', requiredCapabilities: [capability], payload: { task_type: 'design' } });
    await eventually(async () => lines.some((l) => l.taskId === task.id && String(l.msg).startsWith('declined')), 10_000, 'the decline');
    await sleep(2500);
    const waiting = await boss.client.getTask(task.id);
    expect(waiting).toMatchObject({ status: 'pending', attempts: 0, claimed_by: null });
    expect(lines.filter((l) => l.taskId === task.id && l.msg === 'claimed')).toHaveLength(1);
    await daemon(specialist, { executors: { design: () => 'drawn' } });
    const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'completed' && t; });
    expect(done).toMatchObject({ claimed_by: specialist.id, attempts: 1, result: { summary: 'drawn' } });
  });

  it('says why in every failure it logs', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const { lines } = await daemon(worker, { executors: { '*': () => { throw new Error('disk full'); } } });
    const task = await boss.client.handoff({ to: worker.id, title: 'doomed', maxAttempts: 1 });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'failed');
    const failed = await eventually(async () => lines.find((l) => l.taskId === task.id && l.msg === 'failed'), 5000, 'the failure log line');
    expect(failed).toMatchObject({ reason: 'disk full', status: 'failed' });
  });

  it('retries a retryable failure with growing backoff, then dead-letters it', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    await daemon(worker, { executors: { '*': () => { throw new RetryableError('upstream busy'); } } });
    const task = await boss.client.handoff({ to: worker.id, title: 'flaky', maxAttempts: 3 });
    const failed = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'failed' && t; }, 30_000);
    expect(failed).toMatchObject({ attempts: 3, status_reason: 'upstream busy' });
    const events = await boss.client.events(task.id);
    const claims = events.filter((e) => e.from_status === 'pending' && ['claimed', 'in_progress'].includes(e.to_status)).map((e) => Date.parse(e.at));
    const requeues = events.filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending').map((e) => Date.parse(e.at));
    expect(claims).toHaveLength(3);
    expect(requeues).toHaveLength(2);
    // base 2 s, doubling, jitter 0.75 to 1.25: at least 1.5 s, then 3 s.
    expect(claims[1]! - requeues[0]!).toBeGreaterThanOrEqual(1500);
    expect(claims[2]! - requeues[1]!).toBeGreaterThanOrEqual(3000);
    expect(events.at(-1)!.note).toMatch(/out of attempts \(3 of 3\)/);
  });

  it('hands a task back, not counting an attempt, while what does the work cannot be reached, and pauses its claims', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    let away = true;
    const tries: number[] = [];
    await daemon(worker, {
      executors: {
        '*': () => {
          tries.push(Date.now());
          if (away) throw new UnavailableError('could not reach the gateway at http://127.0.0.1:1: connect ECONNREFUSED');
          return { status: 'success', summary: 'done once it was back' };
        },
      },
    });
    const task = await boss.client.handoff({ to: worker.id, title: 'needs the gateway', maxAttempts: 2 });
    // More tries than the task has attempts, each handed back; none of them counts (below: the task is
    // done on its first counted attempt).
    const handedBackEvents = async () => (await boss.client.events(task.id)).filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending');
    await eventually(async () => (await handedBackEvents()).length >= 3, 60_000, 'three tries handed back while the gateway is away');
    // The daemon waits longer each time (5 s, then 10 s, jitter-free on its side).
    expect(tries[1]! - tries[0]!).toBeGreaterThanOrEqual(5000);
    expect(tries[2]! - tries[1]!).toBeGreaterThanOrEqual(10_000);
    away = false;
    const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'completed' && t; }, 60_000, 'the task done once the gateway is back');
    expect(done).toMatchObject({ attempts: 1, result: { summary: 'done once it was back' } });
    const handedBack = await handedBackEvents();
    expect(handedBack.length).toBeGreaterThanOrEqual(3);
    for (const e of handedBack) expect(e.note).toBe('handed back: could not reach the gateway at http://127.0.0.1:1: connect ECONNREFUSED');
  }, 120_000);

  it('aborts a running executor when the task is cancelled', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    let abortedAt = 0;
    const { instance } = await daemon(worker, {
      executors: { '*': (_task, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => { abortedAt = Date.now(); reject(ctx.signal.reason); })) },
    });
    const task = await boss.client.handoff({ to: worker.id, title: 'long job' });
    await eventually(async () => instance.runningTasks.length === 1, 10_000, 'the task to start');
    await boss.client.cancel(task.id, 'not needed');
    await eventually(async () => abortedAt > 0, 30_000, 'the abort');
    await eventually(async () => instance.runningTasks.length === 0);
    expect((await boss.client.getTask(task.id)).status).toBe('cancelled');
  });

  it('asks the sender and resumes with the answer (input_required round trip)', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    await daemon(worker, { executors: { '*': async (_task, ctx) => ({ status: 'success', summary: `told: ${await ctx.ask('which colour?')}` }) } });
    const task = await boss.client.handoff({ to: worker.id, title: 'paint' });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'input_required', 10_000, 'the question');
    const [question] = await boss.client.messages({ taskId: task.id, kind: 'question' });
    expect(question!.body).toEqual({ text: 'which colour?' });
    await boss.client.answer(task.id, 'blue');
    const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'completed' && t; });
    expect(done.result!.summary).toBe('told: blue');
  });

  it('hands the executor an answer that came before it looked, once, and never an earlier attempt\'s', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const seen: Array<string | undefined> = [];
    await daemon(worker, {
      executors: {
        '*': async (task, ctx) => {
          if (ctx.attempt === 1) {
            // Asked the way a command the executor runs asks (`baton ask`), and answered before the
            // executor looks: the task is in progress again by then.
            await worker.client.ask(task.id, 'which colour?');
            await eventually(async () => (await worker.client.getTask(task.id)).status === 'in_progress', 20_000, 'the answer');
            seen.push(await ctx.answered(), await ctx.answered());
            throw new RetryableError('go again');
          }
          seen.push(await ctx.answered());
          return `attempt ${ctx.attempt}`;
        },
      },
    });
    const task = await boss.client.handoff({ to: worker.id, title: 'paint', maxAttempts: 2 });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'input_required', 10_000, 'the question');
    await boss.client.answer(task.id, 'blue');
    const done = await eventually(async () => { const t = await boss.client.getTask(task.id); return t.status === 'completed' && t; }, 30_000, 'the second attempt');
    expect(done.result!.summary).toBe('attempt 2');
    expect(seen).toEqual(['blue', undefined, undefined]);
  });

  it('frees the slot of a task waiting for an answer, here and in the database, and resumes it when answered', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker', { maxConcurrent: 1 });
    await daemon(worker, {
      executors: { '*': async (task, ctx) => (task.title === 'question' ? `told: ${await ctx.ask('which colour?')}` : 'quick') },
    });
    const asking = await boss.client.handoff({ to: worker.id, title: 'question' });
    await eventually(async () => (await boss.client.getTask(asking.id)).status === 'input_required', 10_000, 'the question');
    // Its one slot is free while nobody answers: the next task runs.
    const quick = await boss.client.handoff({ to: worker.id, title: 'quick' });
    await eventually(async () => (await boss.client.getTask(quick.id)).status === 'completed', 20_000, 'the next task to run while the question waits');
    const later = await boss.client.handoff({ to: worker.id, title: 'later' });
    await eventually(async () => (await boss.client.getTask(later.id)).status === 'completed', 20_000, 'a second task meanwhile');
    expect((await boss.client.getTask(asking.id)).status).toBe('input_required');
    await boss.client.answer(asking.id, 'blue');
    const done = await eventually(async () => { const t = await boss.client.getTask(asking.id); return t.status === 'completed' && t; });
    expect(done.result!.summary).toBe('told: blue');
  });

  it('lets an agent claim while its tasks wait for answers (max_concurrent counts the work only)', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker', { maxConcurrent: 1 });
    const first = await boss.client.handoff({ to: worker.id, title: 'first' });
    const second = await boss.client.handoff({ to: worker.id, title: 'second' });
    const [held] = await worker.client.claimNext({ limit: 1, start: true });
    await expect(worker.client.claimNext({ limit: 1 })).resolves.toEqual([]);
    await worker.client.ask(held!.id, 'which one?');
    const [next] = await worker.client.claimNext({ limit: 1 });
    expect([first.id, second.id]).toContain(next!.id);
    expect(next!.id).not.toBe(held!.id);
    // The answered task goes on even though the agent is full again.
    await boss.client.answer(held!.id, 'this one');
    expect((await worker.client.getTask(held!.id)).status).toBe('in_progress');
  });

  it('never runs more than max_concurrent tasks at once', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker', { maxConcurrent: 2 }); // set by the operator; the daemon reads it from its row
    let now = 0;
    let peak = 0;
    await daemon(worker, {
      executors: { '*': async () => { now++; peak = Math.max(peak, now); await sleep(1200); now--; return 'done'; } },
    });
    const tasks = await Promise.all(Array.from({ length: 5 }, (_, i) => boss.client.handoff({ to: worker.id, title: `job ${i}` })));
    await eventually(async () => {
      const all = await Promise.all(tasks.map((t) => boss.client.getTask(t.id)));
      return all.every((t) => t.status === 'completed');
    }, 30_000);
    expect(peak).toBe(2);
  });

  it('on stop, lets tasks finish within the grace period, releases the rest and goes inactive', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const { instance } = await daemon(worker, {
      maxConcurrent: 2,
      executors: { quick: async () => { await sleep(300); return 'quick'; }, slow: () => new Promise(() => undefined) },
    });
    const quick = await boss.client.handoff({ to: worker.id, title: 'quick', payload: { task_type: 'quick' } });
    const slow = await boss.client.handoff({ to: worker.id, title: 'slow', payload: { task_type: 'slow' } });
    await eventually(async () => instance.runningTasks.length === 2, 10_000, 'both tasks to start');
    await instance.stop({ graceSeconds: 1 });
    expect((await boss.client.getTask(quick.id)).status).toBe('completed');
    expect(await boss.client.getTask(slow.id)).toMatchObject({ status: 'pending', claimed_by: null, attempts: 0 });
    expect((await boss.client.agent(worker.id)).is_active).toBe(false);
  });

  it('hands off sub-tasks linked to their parent, whose results the child sees', async () => {
    const boss = await newAgent('boss');
    const lead = await newAgent('lead');
    const helper = await newAgent('helper');
    let seen: Task[] = [];
    await daemon(helper, { executors: { '*': (_task, ctx) => { seen = ctx.parents; return 'helped'; } } });
    await daemon(lead, {
      executors: {
        '*': async (_task, ctx) => {
          const child = await ctx.handoff({ to: helper.id, title: 'sub-task' });
          expect(child.parent_task_id).toBe(ctx.task.id);
          return { status: 'partial', summary: 'delegated', child: child.id };
        },
      },
    });
    const root = await boss.client.handoff({ to: lead.id, title: 'big job', payload: { brief: 'do it' } });
    await eventually(async () => seen.length > 0, 20_000, 'the child to run');
    expect(seen.map((t) => t.id)).toEqual([root.id]);
    expect(seen[0]!.payload).toEqual({ brief: 'do it' });
  });

  it('refuses and logs the late result of a worker whose lease lapsed and whose task another finished', async () => {
    const boss = await newAgent('boss');
    const slowpoke = await newAgent('slowpoke', { capabilities: ['fence'] });
    const rescuer = await newAgent('rescuer', { capabilities: ['fence'] });
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const task = await boss.client.broadcast({ title: 'fenced', requiredCapabilities: ['fence'], leaseSeconds: 5 });
    // Claims once at start and is never heard from again (its schedules are yearly, though it says it
    // wakes every second, and it does not listen for work), then finishes late.
    const { instance, lines } = await daemon(slowpoke, {
      poll: '0 0 1 1 *', heartbeat: '0 0 1 1 *', everySeconds: 1, push: false,
      executors: { '*': async () => { await held; return { status: 'success', summary: 'late' }; } },
    });
    expect(instance.runningTasks.map((t) => t.id)).toEqual([task.id]);
    await daemon(rescuer, { slowPollSeconds: 1, executors: { '*': () => ({ status: 'success', summary: 'rescued' }) } });
    // Anyone may sweep; sweeping here keeps the test about fencing, not about when a daemon sweeps.
    const done = await eventually(async () => {
      await boss.client.sweep();
      const t = await boss.client.getTask(task.id);
      return t.status === 'completed' && t;
    }, 20_000);
    expect(done).toMatchObject({ claimed_by: rescuer.id, result: { summary: 'rescued' } });
    release();
    await eventually(async () => lines.some((l) => l.msg === 'late outcome refused: the claim was lost'), 5000, 'the refusal log line');
    expect((await boss.client.getTask(task.id)).result!.summary).toBe('rescued');
  });
});

describe('the sweep', () => {
  it('re-queues the unstarted claim of a holder gone quiet past its lease, without counting the attempt', async () => {
    const boss = await newAgent('boss');
    const ghost = await newAgent('ghost');
    await ghost.client.heartbeat('about to vanish');
    const task = await boss.client.handoff({ to: ghost.id, title: 'orphaned' });
    await ghost.client.claim(task.id);
    await goQuiet(ghost.id, [task.id]);
    const report = await boss.client.sweep();
    expect(report.requeued_unstarted).toBeGreaterThanOrEqual(1);
    const requeued = await boss.client.getTask(task.id);
    expect(requeued).toMatchObject({ status: 'pending', attempts: 0, claimed_by: null });
    expect(requeued.status_reason).toMatch(new RegExp(`^holder ${ghost.id} unheard since \\S+ \\(lease 00:05:00\\); not started$`));
    expect((await boss.client.events(task.id)).at(-1)).toMatchObject({ actor: 'sweep', note: 'claim lapsed before the work started; re-queued' });
  });

  it('keeps a claim whose lease ran out while its holder is still heard from', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const task = await boss.client.handoff({ to: worker.id, title: 'still at it', leaseSeconds: 5 });
    await worker.client.claim(task.id, { start: true });
    await db.query(`update task_handoffs set lease_expires_at = now() - interval '1 second' where id = $1`, [task.id]);
    await boss.client.sweep();
    expect(await boss.client.getTask(task.id)).toMatchObject({ status: 'in_progress', claimed_by: worker.id });
  });

  it('keeps the claim of a task waiting for input, and restarts its lease when answered', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const task = await boss.client.handoff({ to: worker.id, title: 'slow answer', leaseSeconds: 5 });
    await worker.client.claim(task.id, { start: true });
    await worker.client.ask(task.id, 'which one?');
    await db.query(`update task_handoffs set lease_expires_at = now() - interval '1 hour' where id = $1`, [task.id]);
    await boss.client.sweep();
    expect((await boss.client.getTask(task.id)).status).toBe('input_required');
    const resumed = await boss.client.answer(task.id, 'the first');
    expect(Date.parse(resumed.lease_expires_at!)).toBeGreaterThan(Date.now());
    await boss.client.sweep();
    expect(await boss.client.getTask(task.id)).toMatchObject({ status: 'in_progress', claimed_by: worker.id });
  });

  it('cancels pending tasks past their deadline and tells the sender', async () => {
    const boss = await newAgent('boss');
    const nobody = await newAgent('nobody');
    const task = await boss.client.handoff({ to: nobody.id, title: 'too late', deadline: new Date(Date.now() + 1500) });
    await sleep(1700);
    await boss.client.sweep();
    expect(await boss.client.getTask(task.id)).toMatchObject({ status: 'cancelled', status_reason: 'deadline passed' });
    const [result] = await boss.client.messages({ taskId: task.id, kind: 'result' });
    expect(result!.body).toMatchObject({ status: 'cancelled', reason: 'deadline passed' });
  });

  it('re-queues an expired lease and dead-letters it on the last attempt', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const task = await boss.client.handoff({ to: worker.id, title: 'dropped', maxAttempts: 2, leaseSeconds: 5 });
    await worker.client.claim(task.id, { start: true });
    await goQuiet(worker.id, [task.id]);
    await boss.client.sweep();
    const requeued = await boss.client.getTask(task.id);
    expect(requeued).toMatchObject({ status: 'pending', attempts: 1 });
    expect(requeued.status_reason).toMatch(new RegExp(`^holder ${worker.id} unheard since .* \\(lease 00:00:05\\); re-queued after attempt 1 of 2$`));
    await worker.client.claim(task.id, { start: true });
    await goQuiet(worker.id, [task.id]);
    await boss.client.sweep();
    const dead = await boss.client.getTask(task.id);
    expect(dead).toMatchObject({ status: 'failed', attempts: 2 });
    expect(dead.status_reason).toMatch(/; failed on the last attempt \(2 of 2\)$/);
  });

  it('is safe to run from many callers at once', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker', { maxConcurrent: 20 });
    const tasks = await Promise.all(Array.from({ length: 10 }, (_, i) => boss.client.handoff({ to: worker.id, title: `t${i}`, maxAttempts: 5 })));
    await worker.client.claimNext({ limit: 10, start: true });
    await goQuiet(worker.id, tasks.map((t) => t.id));
    await Promise.all(Array.from({ length: 6 }, () => boss.client.sweep()));
    for (const task of tasks) {
      const events = await boss.client.events(task.id);
      expect(events.filter((e) => e.actor === 'sweep')).toHaveLength(1);
      expect((await boss.client.getTask(task.id)).attempts).toBe(1);
    }
  });
});
