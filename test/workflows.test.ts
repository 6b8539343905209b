/**
 * Work that waits on work, on the real stack: dependencies (a diamond, and a failure that cancels what
 * waits), fan-out with first-success and judge joins, scheduled and recurring hand-offs, and dead
 * letters retried. Retention has a stack of its own (it deletes finished work, which the shared stack's
 * other files still read).
 */
import { describe, expect, it } from 'vitest';
import { lineageTree } from '../src/text/render.js';
import { setScheduleEnabled } from '../src/client/admin.js';
import { broughtBackWith, DependencyError, type ExecutorContext, type Task } from '../src/index.js';
import { daemon, eventually } from './daemon-helpers.js';
import { baton, cliAs, parsed } from './cli.js';
import { admin, database, newAgent, refusal, stack, uniqueId } from './helpers.js';
import { operatorEnv } from './keys-mode.js';

const db = database();
const statusOf = async (t: { client: { getTask(id: string): Promise<Task> } }, id: string) => (await t.client.getTask(id)).status;

describe('dependencies', () => {
  it('run a diamond (A → B, C → D): D waits for both, then sees both results and outputs', async () => {
    const lead = await newAgent('dia-lead');
    const worker = await newAgent('dia-worker', { maxConcurrent: 5 });
    const joiner = await newAgent('dia-joiner');

    const a = await lead.client.handoff({ to: worker.id, title: 'A' });
    const b = await lead.client.handoff({ to: worker.id, title: 'B', dependsOn: [a.id] });
    const c = await lead.client.handoff({ to: worker.id, title: 'C', dependsOn: [a.id] });
    const d = await lead.client.handoff({ to: joiner.id, title: 'D', dependsOn: [b.id, c.id], payload: { task_type: 'merge' } });
    expect(b).toMatchObject({ waiting_on: 1, depends_on: [a.id] });
    expect(d).toMatchObject({ waiting_on: 2, dependency_mode: 'all' });

    // Nothing downstream is claimable yet, by id or by claim-next.
    const early = await refusal(worker.client.claim(b.id), 'BT015');
    expect(early).toBeInstanceOf(DependencyError);
    expect(early.hint).toContain(a.id);
    const [claimedA, ...more] = await worker.client.claimNext({ limit: 10, start: true });
    expect([claimedA!.title, ...more]).toEqual(['A']);

    const seen: { deps?: Task[]; b?: unknown; c?: unknown } = {};
    await daemon(joiner, {
      executors: {
        merge: (_task: Task, ctx: ExecutorContext) => {
          seen.deps = ctx.dependencies;
          seen.b = ctx.input('b.json')?.json;
          seen.c = ctx.input('c.json')?.json;
          return { status: 'success', summary: 'merged' };
        },
      },
    });

    await worker.client.complete(a.id, claimedA!.claim_token!, { status: 'success', summary: 'a done' });
    const [first, second] = await eventually(async () => {
      const claimed = await worker.client.claimNext({ limit: 10, start: true });
      return claimed.length === 2 ? claimed : undefined;
    }, 10_000, 'B and C to become claimable');
    expect([first!.title, second!.title].sort()).toEqual(['B', 'C']);
    const held = (title: string) => [first!, second!].find((t) => t.title === title)!;

    await worker.client.attachArtifact(b.id, 'b.json', { json: { from: 'B' } });
    await worker.client.complete(b.id, held('B').claim_token!, { status: 'success', summary: 'b done', artifacts: [{ name: 'b.json' }] });
    // One of two: D still waits.
    const halfway = (await db.query('select status, waiting_on from task_handoffs where id = $1', [d.id])).rows[0];
    expect(halfway).toEqual({ status: 'pending', waiting_on: 1 });

    await worker.client.attachArtifact(c.id, 'c.json', { json: { from: 'C' } });
    await worker.client.complete(c.id, held('C').claim_token!, { status: 'success', summary: 'c done\nover two lines', artifacts: [{ name: 'c.json' }] });

    await eventually(async () => (await statusOf(lead, d.id)) === 'completed', 15_000, 'D to complete');
    expect(seen.deps!.map((t) => [t.title, t.status, t.result?.summary])).toEqual([['B', 'completed', 'b done'], ['C', 'completed', 'c done\nover two lines']]);
    expect(seen.b).toEqual({ from: 'B' });
    expect(seen.c).toEqual({ from: 'C' });

    // The chain of A shows the diamond: everything that waited on A, and what each waited for.
    const chain = await lead.client.chain(a.id);
    expect(chain.map((r) => r.title).sort()).toEqual(['A', 'B', 'C', 'D']);
    expect(chain.find((r) => r.id === d.id)?.depends_on).toEqual([b.id, c.id]);
    const tree = lineageTree(chain);
    expect(tree).toMatch(new RegExp(`after.* B \\(${b.id.slice(0, 8)}\\), C \\(${c.id.slice(0, 8)}\\)`));
    // A summary over two lines keeps the tree: its second line sits under its first.
    const lines = tree.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
    const summary = lines.find((l) => l.endsWith('→  c done'))!;
    const nextLine = lines[lines.indexOf(summary) + 1]!;
    expect(nextLine.indexOf('over two lines')).toBe(summary.indexOf('c done'));
    expect(nextLine.slice(0, nextLine.indexOf('over two lines')).trim()).toMatch(/^│*$/);
    // From B, as its worker: what B led to (D) and what it worked from (A); its sibling C is another chain.
    expect((await worker.client.chain(b.id)).map((r) => r.title).sort()).toEqual(['A', 'B', 'D']);
  });

  it('release a task once when the two it waits on end in one statement, and cancel one that also waited on a failure', async () => {
    const lead = await newAgent('one-lead');
    const worker = await newAgent('one-worker', { maxConcurrent: 5 });
    const a = await lead.client.handoff({ to: worker.id, title: 'A' });
    const b = await lead.client.handoff({ to: worker.id, title: 'B' });
    const f = await lead.client.handoff({ to: worker.id, title: 'F' });
    const both = await lead.client.handoff({ to: lead.id, title: 'after A and B', dependsOn: [a.id, b.id] });
    const withFailure = await lead.client.handoff({ to: lead.id, title: 'after A and F', dependsOn: [a.id, f.id] });
    const held = await worker.client.claimNext({ limit: 3, start: true });
    expect(held).toHaveLength(3);
    const outcomes = await worker.client.reportOutcomes(held.map((t) => (t.id === f.id
      ? { taskId: t.id, claimToken: t.claim_token, error: 'F broke' }
      : { taskId: t.id, claimToken: t.claim_token, result: { status: 'success' as const } })));
    expect(outcomes.map((o) => o.status).sort()).toEqual(['completed', 'completed', 'failed']);

    expect(await lead.client.getTask(both.id)).toMatchObject({ status: 'pending', waiting_on: 0, not_before: null });
    const cancelled = await lead.client.getTask(withFailure.id);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.status_reason).toContain('F broke');
    const { rows } = await db.query(`select count(*)::int as n from task_events where task_id = $1`, [both.id]);
    expect(rows[0].n).toBe(1); // created; released without a change of status
  });

  it('cancel what waits when a dependency fails, with the reason, through the whole graph', async () => {
    const lead = await newAgent('fail-lead');
    const worker = await newAgent('fail-worker', { maxConcurrent: 5 });
    const b = await lead.client.handoff({ to: worker.id, title: 'B' });
    const c = await lead.client.handoff({ to: worker.id, title: 'C' });
    const d = await lead.client.handoff({ to: worker.id, title: 'D', dependsOn: [b.id, c.id] });
    const e = await lead.client.handoff({ to: worker.id, title: 'E', dependsOn: [d.id] });
    const anyway = await lead.client.handoff({ to: worker.id, title: 'runs anyway', dependsOn: [c.id, b.id, c.id], onDependencyFailure: 'run' });
    expect(anyway.depends_on).toEqual([c.id, b.id]); // each once, in the order given

    const claimedB = await worker.client.claim(b.id, { start: true });
    await worker.client.fail(b.id, claimedB.claim_token!, 'the upstream API is gone');

    const dNow = await lead.client.getTask(d.id);
    expect(dNow.status).toBe('cancelled');
    expect(dNow.status_reason).toMatch(new RegExp(`task ${b.id} \\(B\\) it depends on was failed: the upstream API is gone`));
    expect((await lead.client.getTask(e.id)).status_reason).toMatch(new RegExp(`task ${d.id} \\(D\\) it depends on was cancelled`));
    expect(await lead.client.getTask(anyway.id)).toMatchObject({ status: 'pending', waiting_on: 1 }); // still waits for C
    expect(await statusOf(lead, c.id)).toBe('pending'); // the sibling is left alone

    // Depending on a task that already failed is refused up front, unless told to run anyway.
    await refusal(lead.client.handoff({ to: worker.id, title: 'too late', dependsOn: [b.id] }), 'BT015');
    // A task nobody here can see is as good as none.
    const stranger = await newAgent('fail-stranger');
    await refusal(stranger.client.handoff({ to: worker.id, title: 'snoop', dependsOn: [c.id] }), 'BT002');
    // And dependencies never change after the hand-off.
    await expect(db.query('update task_handoffs set depends_on = $2 where id = $1', [c.id, [e.id]])).rejects.toThrow(/dependencies of task .* cannot change/);
  });
});

describe('dependencies under concurrency', () => {
  it('never leave a task waiting on a dependency that ended while it was being handed off', async () => {
    const lead = await newAgent('race-lead');
    const worker = await newAgent('race-worker', { maxConcurrent: 50 });
    const rounds = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
      const b = await lead.client.handoff({ to: worker.id, title: `B${i}` });
      const held = await worker.client.claim(b.id, { start: true });
      const [d] = await Promise.all([
        lead.client.handoff({ to: worker.id, title: `D${i}`, dependsOn: [b.id] }),
        worker.client.complete(b.id, held.claim_token!, { status: 'success' }),
      ]);
      return d.id;
    }));
    const { rows } = await db.query('select title, waiting_on from task_handoffs where id = any ($1) and waiting_on > 0', [rounds]);
    expect(rows).toEqual([]);
  });
});

describe('fan-out and fan-in', () => {
  it('first success wins: the join runs with the winner and the other four are cancelled', async () => {
    const capability = uniqueId('race');
    const lead = await newAgent('first-lead');
    const planner = await newAgent('first-planner');
    const racer = await newAgent('first-racer', { capabilities: [capability], maxConcurrent: 5 });
    let fanned: { tasks: string[]; join: string } | undefined;
    await daemon(planner, {
      executors: {
        plan: async (_task: Task, ctx: ExecutorContext) => {
          fanned = await ctx.fanOut(
            [1, 2, 3, 4, 5].map((n) => ({ title: `approach ${n}`, requiredCapabilities: [capability], payload: { n } })),
            { mode: 'first', title: 'take the first answer' });
          return { status: 'success', summary: 'fanned out to 5' };
        },
      },
    });
    const parent = await lead.client.handoff({ to: planner.id, title: 'plan', payload: { task_type: 'plan' } });
    await eventually(async () => fanned, 10_000, 'the fan-out');
    const join = await planner.client.getTask(fanned!.join);
    expect(join).toMatchObject({ parent_task_id: parent.id, dependency_mode: 'any', to_agent: planner.id, waiting_on: 5 });

    const [winner, loser] = await racer.client.claimNext({ limit: 2, capabilities: [capability], start: true });
    await racer.client.complete(winner!.id, winner!.claim_token!, { status: 'success', summary: `approach ${winner!.payload.n} works` });

    await eventually(async () => (await statusOf(planner, fanned!.join)) === 'completed', 15_000, 'the join to complete');
    // The planner sent them, so it sees them all.
    const others = await Promise.all(fanned!.tasks.filter((id) => id !== winner!.id).map((id) => planner.client.getTask(id)));
    expect(others.map((t) => t.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(others.every((t) => t.status_reason?.includes(`${winner!.id}`) && t.status_reason.includes('finished first'))).toBe(true);
    expect(others.some((t) => t.id === loser!.id)).toBe(true); // even the one the racer held
    const joined = await planner.client.getTask(fanned!.join);
    expect(joined.result).toMatchObject({ status: 'success', summary: `approach ${winner!.payload.n} works`, winner: { task_id: winner!.id } });
  });

  it('all: the built-in join gathers every result in order, and says partial when one ran anyway without it', async () => {
    const capability = uniqueId('part');
    const lead = await newAgent('all-lead');
    const planner = await newAgent('all-planner');
    const helper = await newAgent('all-helper', { capabilities: [capability], maxConcurrent: 5 });
    let fanned: { tasks: string[]; join: string } | undefined;
    await daemon(planner, {
      executors: {
        plan: async (_task: Task, ctx: ExecutorContext) => {
          fanned = await ctx.fanOut(['intro', 'body', 'end'].map((part) => ({ title: `write the ${part}`, requiredCapabilities: [capability], payload: { part } })),
            { mode: 'all', onFailure: 'run' });
          return { status: 'success', summary: 'split in three' };
        },
      },
    });
    await lead.client.handoff({ to: planner.id, title: 'write a post', payload: { task_type: 'plan' } });
    await eventually(async () => fanned, 10_000, 'the fan-out');
    const parts = await helper.client.claimNext({ limit: 3, capabilities: [capability], start: true });
    for (const part of parts) {
      if (part.payload.part === 'body') await helper.client.fail(part.id, part.claim_token!, 'writer\'s block');
      else await helper.client.complete(part.id, part.claim_token!, { status: 'success', summary: `${part.payload.part} written` });
    }
    await eventually(async () => (await statusOf(planner, fanned!.join)) === 'completed', 15_000, 'the join');
    const { result } = await planner.client.getTask(fanned!.join);
    expect(result).toMatchObject({ status: 'partial' });
    expect((result as unknown as { results: Array<{ task_id: string; status: string }> }).results.map((r) => r.status)).toEqual(['completed', 'failed', 'completed']);
    expect(result!.summary).toBe("write the intro: intro written\nwrite the body: failed (writer's block)\nwrite the end: end written");
  });

  it('judge: the join goes to an agent with the judging capability, with all five results', async () => {
    const capability = uniqueId('idea');
    const judging = uniqueId('judge');
    const lead = await newAgent('judge-lead');
    const thinker = await newAgent('judge-thinker', { capabilities: [capability], maxConcurrent: 5 });
    const judge = await newAgent('judge-judge', { capabilities: [judging] });
    const parent = await lead.client.handoff({ to: lead.id, title: 'choose a name' });
    await lead.client.claim(parent.id, { start: true });
    const fanned = await lead.client.fanOut(parent.id,
      ['Baton', 'Relay', 'Courier', 'Handoff', 'Pass'].map((name) => ({ title: `propose ${name}`, requiredCapabilities: [capability], payload: { name } })),
      { mode: 'judge', capability: judging, title: 'pick the best name' });

    let seen: Task[] = [];
    await daemon(judge, {
      executors: {
        judge: (_task: Task, ctx: ExecutorContext) => {
          seen = ctx.dependencies;
          const best = ctx.dependencies.find((d) => d.result?.summary === 'Baton')!;
          return { status: 'success', summary: `the best is ${best.result!.summary}`, chosen: best.id };
        },
      },
    });
    const claimed = await thinker.client.claimNext({ limit: 5, capabilities: [capability], start: true });
    expect(claimed).toHaveLength(5);
    for (const t of claimed) await thinker.client.complete(t.id, t.claim_token!, { status: 'success', summary: String(t.payload.name) });

    await eventually(async () => (await statusOf(lead, fanned.join)) === 'completed', 15_000, 'the judge to finish');
    const verdict = await lead.client.getTask(fanned.join);
    expect(verdict).toMatchObject({ claimed_by: judge.id, required_capabilities: [judging], result: { summary: 'the best is Baton' } });
    expect(seen.map((d) => d.result?.summary).sort()).toEqual(['Baton', 'Courier', 'Handoff', 'Pass', 'Relay']);
  });
});

describe('later and recurring', () => {
  it('a task with run_at is not claimed before then', async () => {
    const lead = await newAgent('later-lead');
    const worker = await newAgent('later-worker');
    const at = new Date(Date.now() + 2500);
    const task = await lead.client.handoff({ to: worker.id, title: 'at the hour', runAt: at });
    expect(task.not_before).not.toBeNull();
    const early = await refusal(worker.client.claim(task.id), 'BT014');
    expect(early.message).toMatch(/is scheduled for/);
    expect(await worker.client.claimNext()).toEqual([]);
    const claimed = await eventually(async () => (await worker.client.claimNext())[0], 10_000, 'the scheduled task');
    expect(claimed.id).toBe(task.id);
    expect(Date.now()).toBeGreaterThanOrEqual(at.getTime());
  });

  it('a listening daemon starts a scheduled task at its time, not at its next poll', async () => {
    const lead = await newAgent('later-push-lead');
    const worker = await newAgent('later-push-worker');
    let startedAt = 0;
    const { lines } = await daemon(worker, { poll: '0 0 * * *', executors: { '*': () => { startedAt = Date.now(); return { status: 'success' }; } } });
    await eventually(async () => lines.some((l) => l.msg === 'push is up: listening for work') || undefined, 30_000, 'push to be up');
    const at = Date.now() + 2000;
    const task = await lead.client.handoff({ to: worker.id, title: 'at its time', runAt: new Date(at) });
    // Its daily poll would not have run it within the deadline: the wake-up at run_at did.
    await eventually(async () => (await statusOf(lead, task.id)) === 'completed', 60_000, 'the scheduled task to run');
    expect(startedAt).toBeGreaterThanOrEqual(at);
  });

  it('a recurring hand-off makes exactly one task per slot, with three daemons sweeping at once', async () => {
    const sender = await newAgent('cron-sender');
    const target = await newAgent('cron-target');
    const name = uniqueId('nightly');
    const schedule = await admin.createSchedule({
      name, schedule: '*/5 * * * *', from: sender.id, to: target.id,
      template: { title: 'the nightly report', payload: { report: 'nightly' }, priority: 'high' },
    });
    expect(new Date(schedule.next_run_at).getUTCMinutes() % 5).toBe(0);
    expect(new Date(schedule.next_run_at).getTime()).toBeGreaterThan(Date.now());

    // Make its slot due now, then let three daemons (and three direct callers) sweep at once.
    const slot = (await db.query("update recurring_handoffs set next_run_at = date_trunc('minute', now()) where id = $1 returning next_run_at", [schedule.id])).rows[0].next_run_at as Date;
    const sweepers = await Promise.all([1, 2, 3].map((n) => newAgent(`cron-sweeper${n}`)));
    await Promise.all(sweepers.map((s) => daemon(s)));
    await Promise.all(sweepers.flatMap((s) => [s.client.sweep(), s.client.sweep()]));

    const made = await eventually(async () => {
      const { rows } = await db.query('select id, recurrence_slot, from_agent, to_agent, title, priority, payload from task_handoffs where recurring_id = $1', [schedule.id]);
      return rows.length ? rows : undefined;
    }, 10_000, 'the recurring task');
    await new Promise((r) => setTimeout(r, 2500)); // more sweeps, which must make nothing more
    // One task per slot: a run that straddles a five-minute boundary may rightly make the next slot's too.
    const { rows: all } = await db.query<{ recurrence_slot: Date }>('select recurrence_slot from task_handoffs where recurring_id = $1', [schedule.id]);
    expect(all.filter((r) => r.recurrence_slot.getTime() === slot.getTime())).toHaveLength(1);
    expect(new Set(all.map((r) => r.recurrence_slot.getTime())).size).toBe(all.length);
    expect(made[0]).toMatchObject({ recurrence_slot: slot, from_agent: sender.id, to_agent: target.id, title: 'the nightly report', priority: 'high', payload: { report: 'nightly' } });
    const after = (await admin.listSchedules()).find((s) => s.name === name)!;
    expect(after).toMatchObject({ last_task_id: made[0].id, last_error: null });
    // The schedule moved on to a later slot of its own. (Not compared with the clock: a run that
    // straddles a five-minute boundary has that boundary as its next slot, already past by now.)
    expect(new Date(after.next_run_at).getTime()).toBeGreaterThan(slot.getTime());
    expect(new Date(after.next_run_at).getUTCMinutes() % 5).toBe(0);
    // The sender sees its schedule; the target hears of the task as any hand-off.
    expect((await target.client.listTasks({ box: 'mine' })).map((t) => t.title)).toContain('the nightly report');
    await refusal(admin.createSchedule({ name: uniqueId('bad'), schedule: '61 * * * *', from: sender.id, template: { title: 'x' } }), 'BT005');
    expect(await admin.removeSchedule(name)).toBe(true);
  });
});

describe('dead letters', () => {
  it('are retried as a new task linked to the old one, by the sender or the operator, one open retry at a time', async () => {
    const lead = await newAgent('dead-lead');
    const worker = await newAgent('dead-worker');
    const task = await lead.client.handoff({ to: worker.id, title: 'flaky', payload: { url: 'https://example.test' }, maxAttempts: 1 });
    const held = await worker.client.claim(task.id, { start: true });
    await worker.client.fail(task.id, held.claim_token!, 'connection reset');

    const letters = await admin.deadLetters({ limit: 500 });
    expect(letters.find((l) => l.id === task.id)).toMatchObject({ from_agent: lead.id, last_holder: worker.id, reason: 'connection reset', retried_as: null });

    await refusal(worker.client.retry(task.id), 'BT003'); // not the sender
    const again = await lead.client.retry(task.id);
    expect(again).toMatchObject({ retry_of: task.id, status: 'pending', from_agent: lead.id, to_agent: worker.id, title: 'flaky', payload: { url: 'https://example.test' } });
    await refusal(lead.client.retry(task.id), 'BT010'); // one open retry at a time
    await refusal(lead.client.retry(again.id), 'BT001'); // only failed tasks

    const second = await worker.client.claim(again.id, { start: true });
    await worker.client.fail(again.id, second.claim_token!, 'still down');
    const byOperator = await admin.retry(again.id);
    expect(byOperator).toMatchObject({ retry_of: again.id, from_agent: lead.id });
    expect((await admin.deadLetters({ limit: 500 })).find((l) => l.id === task.id)?.retried_as).toBe(again.id);
  });

  it('bring back what was cancelled because they failed, waiting on the new attempt, through the whole graph', async () => {
    const lead = await newAgent('back-lead');
    const worker = await newAgent('back-worker', { maxConcurrent: 5 });
    const a = await lead.client.handoff({ to: worker.id, title: 'A', maxAttempts: 1 });
    const b = await lead.client.handoff({ to: worker.id, title: 'B' });
    const c = await lead.client.handoff({ to: worker.id, title: 'C', dependsOn: [a.id] });
    const d = await lead.client.handoff({ to: worker.id, title: 'D', dependsOn: [b.id, c.id] });
    const e = await lead.client.handoff({ to: worker.id, title: 'E', dependsOn: [d.id] });
    const theirs = await worker.client.handoff({ to: lead.id, title: 'theirs', dependsOn: [a.id] });
    const dropped = await lead.client.handoff({ to: worker.id, title: 'cancelled by hand', dependsOn: [b.id] });
    await lead.client.cancel(dropped.id, 'not wanted');

    const heldB = await worker.client.claim(b.id, { start: true });
    await worker.client.complete(b.id, heldB.claim_token!, { status: 'success', summary: 'b done' });
    const heldA = await worker.client.claim(a.id, { start: true });
    await worker.client.fail(a.id, heldA.claim_token!, 'flaky disk');
    for (const id of [c.id, d.id, e.id, theirs.id]) expect(await statusOf(lead, id)).toBe('cancelled');

    // The CLI says what came back.
    const retried = await cliAs(lead.token, stack)('retry', a.id.slice(0, 8));
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/Brought back 3 task\(s\) cancelled because it failed/);
    const again = (await lead.client.listTasks({ box: 'sent', limit: 200 })).find((t) => t.retry_of === a.id)!;
    const back = await broughtBackWith(lead.client.db, again);
    const byOld = new Map(back.map((t) => [t.retry_of, t]));
    expect([...byOld.keys()].sort()).toEqual([c.id, d.id, e.id].sort());
    // Each waits on the new attempt of what it waited on; a dependency that completed stays as it was.
    expect(byOld.get(c.id)).toMatchObject({ status: 'pending', title: 'C', depends_on: [again.id], waiting_on: 1 });
    expect(byOld.get(d.id)).toMatchObject({ depends_on: [b.id, byOld.get(c.id)!.id], waiting_on: 1 });
    expect(byOld.get(e.id)).toMatchObject({ depends_on: [byOld.get(d.id)!.id], waiting_on: 1 });
    // Another sender's task is not the retrier's to bring back, nor is one its sender cancelled by hand.
    expect(await statusOf(worker, theirs.id)).toBe('cancelled');
    expect(await statusOf(lead, dropped.id)).toBe('cancelled');

    // And they run, in order, once the new attempt completes.
    const heldAgain = await worker.client.claim(again.id, { start: true });
    await worker.client.complete(again.id, heldAgain.claim_token!, { status: 'success', summary: 'a done' });
    const heldC = await eventually(async () => (await worker.client.claimNext({ limit: 5 })).find((t) => t.title === 'C'), 10_000, 'C to come back claimable');
    expect(heldC.id).toBe(byOld.get(c.id)!.id);
  });
});

describe('the CLI', () => {
  it('hands off after other tasks and at a time, lists dead letters, retries them and manages schedules', async () => {
    const lead = await newAgent('cli-wf-lead');
    const worker = await newAgent('cli-wf-worker');
    const asLead = cliAs(lead.token, stack);
    const operator = (...args: string[]) => baton(args, { SUPABASE_URL: stack.SUPABASE_URL, ...operatorEnv(stack) });

    await worker.client.heartbeat(); // the CLI refuses an offline addressee unless told to queue
    const first = parsed(await asLead('handoff', worker.id, 'first', '--json'));
    const later = await asLead('handoff', worker.id, 'after first, in an hour', '--after', first.id.slice(0, 8), '--run-anyway', '--at', '+1h');
    expect(later.code, later.stderr).toBe(0);
    expect(later.stdout).toMatch(/waiting for 1 task\(s\)/);
    const waiting = (await lead.client.listTasks({ box: 'sent' })).find((t) => t.title === 'after first, in an hour')!;
    expect(waiting).toMatchObject({ depends_on: [first.id], on_dependency_failure: 'run', waiting_on: 1 });
    expect(Date.parse(waiting.run_at!) - Date.now()).toBeGreaterThan(3500_000);
    const badAt = await asLead('handoff', worker.id, 'x', '--at', 'tomorrowish');
    expect(badAt.code).toBe(2);

    const held = await worker.client.claim(first.id, { start: true });
    await worker.client.fail(first.id, held.claim_token!, 'disk full');
    const failed = await asLead('tasks', '--failed');
    expect(failed.stdout).toContain('first');
    const retried = await asLead('retry', first.id.slice(0, 8));
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/^Retried as/);
    const byReason = await operator('dead-letters', '--by', 'reason', '--limit', '10000');
    expect(byReason.stdout).toMatch(/^\s+\d+\s+disk full$/m);
    const noPrefix = await operator('retry', first.id.slice(0, 8));
    expect(noPrefix.code).toBe(2);

    // Queue depth by status and capability, from the database.
    const capability = uniqueId('queued');
    await lead.client.broadcast({ title: 'waiting in the queue', requiredCapabilities: [capability] });
    const queue = parsed<Array<{ status: string; capability: string; tasks: number }>>(await operator('queue', '--json'));
    expect(queue).toContainEqual(expect.objectContaining({ status: 'pending', capability, tasks: 1 }));
    expect((await operator('queue')).stdout).toMatch(new RegExp(`pending\\s+${capability}\\s+1\\s`));

    const name = uniqueId('cli-sched');
    const added = await operator('schedule', 'add', name, '--cron', '0 6 * * 1-5', '--from', lead.id, '--to', worker.id, '--title', 'weekday report');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/next at \d{4}-\d{2}-\d{2}T06:00:00/);
    expect((await operator('schedule', 'list')).stdout).toMatch(new RegExp(`${name}\\s+0 6 \\* \\* 1-5`));
    const bad = await operator('schedule', 'add', uniqueId('cli-bad'), '--cron', '0 25 * * *', '--from', lead.id, '--to', worker.id, '--title', 'never');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/outside 0 to 23/);
    const nowhere = await operator('schedule', 'add', uniqueId('cli-nowhere'), '--cron', '0 6 * * *', '--from', lead.id, '--title', 'to nobody');
    expect(nowhere.code).toBe(2);
    const paused = await operator('schedule', 'pause', name);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toBe(`Schedule ${name} paused.\n`);
    expect((await admin.listSchedules()).find((s) => s.name === name)).toMatchObject({ enabled: false });
    const resumed = await operator('schedule', 'resume', name);
    expect(resumed.stdout).toMatch(new RegExp(`^Schedule ${name} resumed: next at \\d{4}-`));
    expect((await admin.listSchedules()).find((s) => s.name === name)).toMatchObject({ enabled: true });
    expect((await operator('schedule', 'pause', uniqueId('cli-none'))).code).toBe(2);
    // A schedule is the operator's: an agent's direct write to it is refused, and nothing changes.
    await expect(setScheduleEnabled(lead.client.db, name, false)).rejects.toMatchObject({ code: '42501' });
    expect((await admin.listSchedules()).find((s) => s.name === name)).toMatchObject({ enabled: true });
    expect((await operator('schedule', 'remove', name)).code).toBe(0);
    expect((await operator('schedule', 'remove', name)).code).toBe(2);
  });
});
