/** Hand-offs: idempotency keys, chains with their loop guard and deadlines, claim order and capacity. */
import { describe, expect, it } from 'vitest';
import { database, newAgent, refusal, runningTask } from './helpers.js';

const db = database();

describe('handing off', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob');

  it('returns the first task when the same idempotency key is used again', async () => {
    const key = `k-${crypto.randomUUID()}`;
    const first = await alice.client.handoff({ to: bob.id, title: 'once', idempotencyKey: key });
    const again = await alice.client.handoff({ to: bob.id, title: 'once, retried', idempotencyKey: key });
    expect(again.id).toBe(first.id);
    expect(again.title).toBe('once');
    const { rows } = await db.query('select count(*)::int as n from task_handoffs where from_agent = $1 and idempotency_key = $2', [alice.id, key]);
    expect(rows[0].n).toBe(1);
  });

  it('completes with a result up to 256 KiB and tells the sender, though messages agents send stop at 64 KiB', async () => {
    const task = await runningTask(alice, bob, 'a long report');
    const report = 'x'.repeat(200_000);
    const done = await bob.client.complete(task.id, task.claim_token, { status: 'success', data: { report } });
    expect(done.status).toBe('completed');
    const [message] = await alice.client.messages({ taskId: task.id, kind: 'result' });
    expect(message?.body).toMatchObject({ status: 'completed', result: { data: { report } } });
    await refusal(bob.client.send({ to: alice.id, body: { report } }), 'BT005');
  });

  it('keeps one task for concurrent hand-offs with one key', async () => {
    const key = `k-${crypto.randomUUID()}`;
    const tasks = await Promise.all(Array.from({ length: 8 }, () => alice.client.handoff({ to: bob.id, title: 'burst', idempotencyKey: key })));
    expect(new Set(tasks.map((t) => t.id)).size).toBe(1);
  });

  it('scopes idempotency keys to the sender', async () => {
    const key = `k-${crypto.randomUUID()}`;
    const fromAlice = await alice.client.handoff({ to: bob.id, title: 'a', idempotencyKey: key });
    const fromBob = await bob.client.handoff({ to: alice.id, title: 'b', idempotencyKey: key });
    expect(fromBob.id).not.toBe(fromAlice.id);
  });

  it('links sub-tasks to their parent and root, and refuses a chain deeper than the limit', async () => {
    const deep = await newAgent('deep', { maxConcurrent: 10 });
    const root = await alice.client.handoff({ to: deep.id, title: 'level 0' });
    let parent = await deep.client.claim(root.id, { start: true });
    for (let depth = 1; depth <= 5; depth++) {
      const child = await deep.client.handoff({ to: deep.id, title: `level ${depth}`, parentTaskId: parent.id });
      expect(child).toMatchObject({ parent_task_id: parent.id, root_task_id: root.id, depth });
      parent = await deep.client.claim(child.id, { start: true });
    }
    const err = await refusal(deep.client.handoff({ to: alice.id, title: 'level 6', parentTaskId: parent.id }), 'BT009');
    expect(err.message).toContain('the limit is 5');
  });

  it('shows the holder of a sub-task its whole chain, nearest first, even tasks it could not see', async () => {
    const carol = await newAgent('carol');
    const root = await runningTask(alice, bob, 'root');
    const middle = await bob.client.claim((await bob.client.handoff({ to: bob.id, title: 'middle', parentTaskId: root.id })).id, { start: true });
    const leaf = await bob.client.handoff({ to: carol.id, title: 'leaf', parentTaskId: middle.id });
    await refusal(carol.client.getTask(root.id), 'BT002');
    expect((await carol.client.ancestors(leaf.id)).map((t) => t.title)).toEqual(['middle', 'root']);
    await refusal(alice.client.ancestors(crypto.randomUUID()), 'BT002');
  });

  it('lets only the holder or sender of a parent hand off within it', async () => {
    const carol = await newAgent('carol');
    const task = await runningTask(alice, bob);
    await refusal(carol.client.handoff({ to: alice.id, title: 'hijack', parentTaskId: task.id }), 'BT002');
    const sub = await alice.client.handoff({ to: carol.id, title: 'from the sender', parentTaskId: task.id });
    expect(sub.root_task_id).toBe(task.id);
  });

  it('never gives a child a later deadline than its parent', async () => {
    const deadline = new Date(Date.now() + 3600_000);
    const task = await alice.client.handoff({ to: bob.id, title: 'due soon', deadline });
    const running = await bob.client.claim(task.id, { start: true });
    const later = await bob.client.handoff({ to: alice.id, title: 'child', parentTaskId: running.id, deadline: new Date(Date.now() + 86400_000) });
    expect(Date.parse(later.deadline!)).toBe(Date.parse(task.deadline!));
    const none = await bob.client.handoff({ to: alice.id, title: 'child without', parentTaskId: running.id });
    expect(Date.parse(none.deadline!)).toBe(Date.parse(task.deadline!));
  });
});

describe('claiming the next tasks', async () => {
  const sender = await newAgent('sender');

  it('takes addressed tasks first, then broadcasts, each by priority then age', async () => {
    const capability = `order-${Date.now()}`;
    const worker = await newAgent('worker', { capabilities: [capability], maxConcurrent: 10 });
    const b1 = await sender.client.broadcast({ title: 'broadcast urgent', priority: 'urgent', requiredCapabilities: [capability] });
    const d1 = await sender.client.handoff({ to: worker.id, title: 'direct low', priority: 'low' });
    const d2 = await sender.client.handoff({ to: worker.id, title: 'direct high', priority: 'high' });
    const d3 = await sender.client.handoff({ to: worker.id, title: 'direct high, newer', priority: 'high' });
    const firstTwo = await worker.client.claimNext({ limit: 2 });
    expect(new Set(firstTwo.map((t) => t.id))).toEqual(new Set([d2.id, d3.id]));
    const [third] = await worker.client.claimNext();
    expect(third!.id).toBe(d1.id);
    const [fourth] = await worker.client.claimNext();
    expect(fourth!.id).toBe(b1.id);
    expect(await worker.client.claimNext()).toEqual([]);
  });

  it('merges the broadcasts of each of its capabilities by priority then age, and takes none needing one it lacks', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((x) => `merge-${x}-${Date.now()}`) as [string, string, string];
    const worker = await newAgent('merger', { capabilities: [a, b], maxConcurrent: 10 });
    const bLow = await sender.client.broadcast({ title: 'b, low, oldest', priority: 'low', requiredCapabilities: [b] });
    const aHigh = await sender.client.broadcast({ title: 'a, high', priority: 'high', requiredCapabilities: [a] });
    await sender.client.broadcast({ title: 'a and c: lacks c', priority: 'urgent', requiredCapabilities: [a, c] });
    await sender.client.broadcast({ title: 'c and a: lacks c', priority: 'urgent', requiredCapabilities: [c, a] });
    const baHigh = await sender.client.broadcast({ title: 'b and a, high, newer', priority: 'high', requiredCapabilities: [b, a] });
    const claimed = await worker.client.claimNext({ limit: 10 });
    expect(claimed.map((t) => t.id)).toEqual([aHigh.id, baHigh.id, bLow.id]);
    expect(await worker.client.claimNext({ limit: 10 })).toEqual([]);
  });

  it('never claims beyond max_concurrent, even in one batch', async () => {
    const worker = await newAgent('busy', { maxConcurrent: 2 });
    for (let i = 0; i < 4; i++) await sender.client.handoff({ to: worker.id, title: `job ${i}` });
    const got = await worker.client.claimNext({ limit: 4, start: true });
    expect(got).toHaveLength(2);
    expect(got.every((t) => t.status === 'in_progress')).toBe(true);
    expect(await worker.client.claimNext({ limit: 4 })).toEqual([]);
    const [pending] = await worker.client.listTasks({ box: 'pending' });
    await refusal(worker.client.claim(pending!.id), 'BT008');
    await worker.client.complete(got[0]!.id, got[0]!.claim_token!);
    expect(await worker.client.claimNext({ limit: 4 })).toHaveLength(1);
  });

  it('holds max_concurrent against many concurrent claims by one agent', async () => {
    const worker = await newAgent('eager', { maxConcurrent: 3 });
    const tasks = await Promise.all(Array.from({ length: 10 }, (_, i) => sender.client.handoff({ to: worker.id, title: `job ${i}` })));
    await Promise.allSettled(tasks.map((t) => worker.client.claim(t.id)));
    const { rows } = await db.query(`select count(*)::int as held from task_handoffs where claimed_by = $1 and status = 'claimed'`, [worker.id]);
    expect(rows[0].held).toBe(3);
  });

  it('counts attempts per claim and gives a released attempt back', async () => {
    const worker = await newAgent('releaser');
    const task = await sender.client.handoff({ to: worker.id, title: 'hot potato', maxAttempts: 2 });
    const claimed = await worker.client.claim(task.id, { start: true });
    expect(claimed.attempts).toBe(1);
    const released = await worker.client.release(task.id, claimed.claim_token!, 'not now');
    expect(released).toMatchObject({ status: 'pending', attempts: 0, claimed_by: null });
    const again = await worker.client.claim(task.id, { start: true });
    const retried = await worker.client.fail(task.id, again.claim_token!, 'flaky', { retry: true });
    expect(retried).toMatchObject({ status: 'pending', attempts: 1, status_reason: 'flaky' });
    const backingOff = await refusal(worker.client.claim(task.id, { start: true }), 'BT014');
    expect(backingOff.hint).toMatch(/^Claim it again in \d+ s\.$/);
    await db.query('update task_handoffs set not_before = null where id = $1', [task.id]);
    const last = await worker.client.claim(task.id, { start: true });
    const failed = await worker.client.fail(task.id, last.claim_token!, 'flaky again', { retry: true });
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, status_reason: 'flaky again' });
    await refusal(worker.client.complete(task.id, last.claim_token!), 'BT001');
  });
});
