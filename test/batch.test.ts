/** Batches: many hand-offs and outcomes in one request, each judged alone; daemons that never idle while work waits. */
import diagnostics from 'node:diagnostics_channel';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { OutcomeBatcher } from '../src/agent/outcomes.js';
import { cliAs } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, runningTask, stack, uniqueId } from './helpers.js';

describe('batch RPCs', () => {
  it('hand off many tasks in one request; a bad one is refused alone', async () => {
    const sender = await newAgent('bulk');
    const worker = await newAgent('worker');
    const answers = await sender.client.handoffMany([
      { to: worker.id, title: 'one' },
      { to: worker.id, title: '' },
      { to: 'nobody-at-all', title: 'lost' },
      { to: worker.id, title: 'two', payload: { n: 2 }, priority: 'high' },
    ]);
    expect(answers.map((a) => [a.index, a.code])).toEqual([[0, null], [1, 'BT005'], [2, 'BT002'], [3, null]]);
    expect(answers[1]!.hint).toMatch(/non-empty title/);
    const made = await Promise.all([answers[0]!, answers[3]!].map((a) => sender.client.getTask(a.task_id!)));
    expect(made.map((t) => [t.title, t.from_agent, t.priority])).toEqual([['one', sender.id, 'medium'], ['two', sender.id, 'high']]);
    expect((await sender.client.events(made[0]!.id)).map((e) => [e.actor, e.to_status])).toEqual([[sender.id, 'pending']]);
  });

  it('hand off plain tasks together and the rest one by one, each answer at its index', async () => {
    const sender = await newAgent('bulk');
    const worker = await newAgent('worker');
    const key = uniqueId('key');
    // Addressed to the sender but not claimed by it: it may not hand off work within it.
    const parent = await worker.client.handoff({ to: sender.id, title: 'parent' });
    const items = [
      { to: worker.id, title: 'plain one', payload: { n: 1 } },
      { to: 'nobody-at-all', title: 'lost' },
      { to: worker.id, title: 'keyed', idempotencyKey: key },
      { title: 'plain broadcast', requiredCapabilities: [uniqueId('cap')], priority: 'high' as const },
      { to: worker.id, title: 'child', parentTaskId: parent.id },
      { to: worker.id, title: 'plain two', expectedOutputs: [{ name: 'out.txt' }] },
    ];
    const answers = await sender.client.handoffMany(items);
    expect(answers.map((a) => [a.index, a.code])).toEqual([[0, null], [1, 'BT002'], [2, null], [3, null], [4, 'BT003'], [5, null]]);
    const made = await Promise.all(answers.filter((a) => a.task_id).map((a) => sender.client.getTask(a.task_id!)));
    expect(made.map((t) => t.title)).toEqual(['plain one', 'keyed', 'plain broadcast', 'plain two']);
    expect(made.map((t) => [t.from_agent, t.status, t.root_task_id === t.id])).toEqual(Array(4).fill([sender.id, 'pending', true]));
    expect(made[0]!.payload).toEqual({ n: 1 });
    expect(made[2]!.priority).toBe('high');
    expect(made[3]!.expected_outputs).toEqual([{ name: 'out.txt' }]);
    for (const task of made) {
      expect((await sender.client.events(task.id)).map((e) => [e.actor, e.to_status])).toEqual([[sender.id, 'pending']]);
    }
    // The same key again gives the same task, in a batch as alone.
    const [again] = await sender.client.handoffMany([items[2]!]);
    expect(again!.task_id).toBe(answers[2]!.task_id);
  });

  it('complete and fail many tasks in one request, each by its own rules', async () => {
    const sender = await newAgent('sender');
    const holder = await newAgent('holder', { maxConcurrent: 10 });
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((t) => runningTask(sender, holder, t)));
    const needsOutput = await holder.client.claim((await sender.client.handoff({ to: holder.id, title: 'e', expectedOutputs: [{ name: 'out.txt' }] })).id, { start: true });
    const answers = await holder.client.reportOutcomes([
      { taskId: a!.id, claimToken: a!.claim_token, result: { status: 'success', summary: 'done a' } },
      { taskId: b!.id, claimToken: crypto.randomUUID(), result: { status: 'success' } },
      { taskId: c!.id, claimToken: c!.claim_token, error: 'broke', retry: true },
      { taskId: d!.id, claimToken: d!.claim_token, result: { status: 'nope' } as never },
      { taskId: needsOutput.id, claimToken: needsOutput.claim_token, result: { status: 'success' } },
    ]);
    expect(answers.map((x) => [x.status, x.code])).toEqual([['completed', null], [null, 'BT007'], ['pending', null], [null, 'BT005'], [null, 'BT012']]);
    expect(await sender.client.getTask(b!.id)).toMatchObject({ status: 'in_progress' });
    const [result] = await sender.client.messages({ taskId: a!.id, kind: 'result' });
    expect(result!.body).toMatchObject({ status: 'completed', result: { summary: 'done a' } });
    const [again] = await holder.client.reportOutcomes([{ taskId: a!.id, claimToken: a!.claim_token, error: 'too late' }]);
    expect(again).toMatchObject({ task_id: a!.id, status: null, code: 'BT001' });
  });

  it('complete plain outcomes together and the rest one by one, answering in order', async () => {
    const sender = await newAgent('sender');
    const holder = await newAgent('holder', { maxConcurrent: 10 });
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((t) => runningTask(sender, holder, t)));
    const needsOutput = await holder.client.claim((await sender.client.handoff({ to: holder.id, title: 'e', expectedOutputs: [{ name: 'out.txt' }] })).id, { start: true });
    const answers = await holder.client.reportOutcomes([
      { taskId: a!.id, claimToken: a!.claim_token, result: { status: 'success', summary: 'a' } },
      { taskId: b!.id, claimToken: b!.claim_token, result: { status: 'success', summary: 'b once' } },
      { taskId: b!.id, claimToken: b!.claim_token, result: { status: 'success', summary: 'b twice' } },
      { taskId: needsOutput.id, claimToken: needsOutput.claim_token, result: { status: 'success' } },
      { taskId: c!.id, claimToken: c!.claim_token, result: { status: 'success', handoff: { to_agent: sender.id, title: 'follow-up of c' } } },
      { taskId: d!.id, claimToken: crypto.randomUUID(), result: { status: 'success' } },
      { taskId: 'not-a-task', claimToken: d!.claim_token, result: { status: 'success' } },
    ]);
    expect(answers.map((x) => [x.status, x.code])).toEqual([
      ['completed', null], ['completed', null], [null, 'BT001'], [null, 'BT012'], ['completed', null], [null, 'BT007'], [null, '22P02'],
    ]);
    expect(answers[0]!.task_id).toBe(a!.id);
    // Each completed task has its one event, by its holder, and its result message to the sender.
    for (const [task, summary] of [[a!, 'a'], [b!, 'b once']] as const) {
      const events = await sender.client.events(task.id);
      expect(events.at(-1)).toMatchObject({ actor: holder.id, from_status: 'in_progress', to_status: 'completed' });
      expect(events.filter((e) => e.to_status === 'completed')).toHaveLength(1);
      const [result] = await sender.client.messages({ taskId: task.id, kind: 'result' });
      expect(result).toMatchObject({ from_agent: holder.id, to_agent: sender.id, body: { status: 'completed', result: { summary } } });
    }
    expect((await sender.client.listTasks({ box: 'mine' })).map((t) => t.title)).toContain('follow-up of c');
    expect(await sender.client.getTask(d!.id)).toMatchObject({ status: 'in_progress' });
    expect(await sender.client.getTask(needsOutput.id)).toMatchObject({ status: 'in_progress' });
  });

  it('completes a thousand outcomes in one request, each with its own token and result', async () => {
    // Two senders: one may hand off 600 tasks a minute.
    const senders = [await newAgent('thousand'), await newAgent('thousand')];
    const holder = await newAgent('thousand-holder', { maxConcurrent: 1000 });
    for (const [n, from] of senders.entries()) {
      const made = await from.client.handoffMany(Array.from({ length: 500 }, (_, i) => ({ to: holder.id, title: `t${n * 500 + i}` })));
      expect(made.filter((a) => a.code !== null)).toEqual([]);
    }
    const held = await holder.client.claimNext({ limit: 1000, start: true });
    expect(held).toHaveLength(1000);
    // Every hundredth with a wrong token; the ids as the caller may write them, in capitals.
    const answers = await holder.client.reportOutcomes(held.map((t, i) => ({
      taskId: i % 2 ? t.id.toUpperCase() : t.id,
      claimToken: i % 100 === 7 ? crypto.randomUUID() : t.claim_token,
      result: { status: 'success' as const, summary: t.title },
    })));
    expect(answers.map((x) => x.code ?? 'ok').filter((c) => c !== 'ok')).toEqual(Array(10).fill('BT007'));
    expect(answers.filter((x, i) => x.status === 'completed' && x.task_id === held[i]!.id)).toHaveLength(990);
    const [refused, done] = await Promise.all([held[7]!, held[8]!].map((t) => holder.client.getTask(t.id)));
    expect(refused).toMatchObject({ status: 'in_progress', result: null });
    expect(done).toMatchObject({ status: 'completed', result: { status: 'success', summary: held[8]!.title } });
  });

  it('sends gathered outcomes at once when no other task is still working, without waiting out the window', async () => {
    const sender = await newAgent('gather');
    const holder = await newAgent('gather-holder', { maxConcurrent: 5 });
    const tasks = await Promise.all(['a', 'b', 'c'].map((t) => runningTask(sender, holder, t)));
    let reports = 0;
    const count = (message: unknown) => {
      if ((message as { request: { path: string } }).request.path.endsWith('/rpc/report_outcomes')) reports += 1;
    };
    diagnostics.subscribe('undici:request:create', count);
    try {
      let working = tasks.length;
      // A window of a minute: only the last task reporting can send the batch within the test.
      const batcher = new OutcomeBatcher(holder.client, { moreComing: () => working > 0, claimable: () => 0, claimed: () => undefined }, 60_000);
      const statuses = tasks.map((t) => {
        working -= 1;
        return batcher.submit({ taskId: t.id, claimToken: t.claim_token, result: { status: 'success' } });
      });
      expect(await Promise.all(statuses)).toEqual(['completed', 'completed', 'completed']);
      expect(reports).toBe(1);
    } finally {
      diagnostics.unsubscribe('undici:request:create', count);
    }
  });

  it('report and claim in one request: the outcomes free the slots the claim fills, and neither sinks the other', async () => {
    const sender = await newAgent('along');
    const worker = await newAgent('along-worker', { maxConcurrent: 2 });
    const first = await Promise.all([1, 2].map((n) => runningTask(sender, worker, `first ${n}`)));
    const waiting = await Promise.all([1, 2, 3].map((n) => sender.client.handoff({ to: worker.id, title: `next ${n}` })));

    // Both slots are held: the outcomes free them, so the claim in the same request gets two.
    const answer = await worker.client.reportAndClaim([
      { taskId: first[0]!.id, claimToken: first[0]!.claim_token!, result: { status: 'success', summary: 'one' } },
      { taskId: first[1]!.id, claimToken: '00000000-0000-0000-0000-000000000000', result: { status: 'success' } },
    ], { claim: 2 });
    expect(answer.outcomes.map((o) => [o.task_id, o.status ?? o.code])).toEqual([[first[0]!.id, 'completed'], [first[1]!.id, 'BT007']]);
    // One slot freed (the other outcome was refused), so one task was claimed, and started.
    expect(answer.claimed).toHaveLength(1);
    expect(waiting.map((t) => t.id)).toContain(answer.claimed[0]!.id); // handed off at once: any of them
    expect(answer.claimed[0]).toMatchObject({ status: 'in_progress', claimed_by: worker.id });
    expect(answer.claimError).toBeNull();
    expect((await worker.client.getTask(first[1]!.id)).status).toBe('in_progress'); // the refused one is untouched

    // A claim that is refused leaves the outcomes done.
    const refusedClaim = await worker.client.reportAndClaim([
      { taskId: answer.claimed[0]!.id, claimToken: answer.claimed[0]!.claim_token!, result: { status: 'success' } },
    ], { claim: 1, leaseSeconds: -5 });
    expect(refusedClaim.outcomes[0]).toMatchObject({ status: 'completed' });
    expect(refusedClaim.claimError?.code).toBe('BT005');
    expect(refusedClaim.claimed).toEqual([]);
  });

  it('from a JSON Lines file with the CLI, listing the refused lines', async () => {
    const sender = await newAgent('filer');
    const worker = await newAgent('worker');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-jsonl-'));
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'tasks.jsonl');
    fs.writeFileSync(file, [
      JSON.stringify({ to: worker.id, title: 'first' }), '', JSON.stringify({ to: worker.id, title: 'x'.repeat(300) }),
      JSON.stringify({ to: worker.id, title: 'third', payload: { k: 1 } }),
    ].join('\n'));
    const run = cliAs(sender.token, stack);
    const text = await run('handoff', '--from-file', file);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^Handed off 2 of 3 task\(s\)\.\nline 3: the title is 300 characters long/);
    const broken = await run('handoff', '--from-file', file.replace('tasks', 'missing'));
    expect(broken.code).toBe(2);
    fs.writeFileSync(file, `${JSON.stringify({ to: worker.id, title: 'ok' })}\n{not json`);
    const bad = await run('handoff', '--from-file', file);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toMatch(/line 2 of .* is not JSON.*Nothing was handed off/);
    expect((await worker.client.listTasks({ box: 'mine' })).map((t) => t.title).sort()).toEqual(['first', 'third']);
  });
});

describe('a work-conserving daemon', () => {
  it('claims again as soon as a slot frees while the queue gives work, not at its next poll', async () => {
    const capability = uniqueId('queue');
    const boss = await newAgent('boss');
    const worker = await newAgent('worker', { capabilities: [capability] });
    const answers = await boss.client.handoffMany(Array.from({ length: 30 }, (_, i) => ({ title: `job ${i}`, requiredCapabilities: [capability] })));
    // It polls once an hour: only claiming again as slots free can drain 30 tasks with 3 slots.
    const { lines } = await daemon(worker, {
      capabilities: [capability], maxConcurrent: 3, poll: '0 0 * * * *',
      executors: { '*': async () => { await new Promise((r) => setTimeout(r, 20)); return 'done'; } },
    });
    await eventually(async () => {
      const states = await Promise.all(answers.map((a) => boss.client.getTask(a.task_id!)));
      return states.every((t) => t.status === 'completed');
    }, 25_000, 'all 30 tasks to complete');
    // Mostly in the same requests that reported the work before them.
    const along = lines.filter((l) => l.msg === 'claimed along with a report').reduce((n, l) => n + Number(l.tasks), 0);
    expect(along).toBeGreaterThan(10);
  });
});
