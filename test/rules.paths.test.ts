/**
 * Paths added after the hardening round, held to the rules the older ones obey: an agent moved off a
 * task stops seeing it, also through a child it addressed to itself; a follow-up counts against the
 * hand-off quota whether its completion came alone or in a batch; and a sender's concurrent hand-offs
 * are counted without waiting for each other.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { database, newAgent, refusal, runningTask } from './helpers.js';

const db = database();

describe('an agent moved off a task', () => {
  it('no longer reads it, its result or its artifacts through a child it addressed to itself, nor retries within it', async () => {
    const a = await newAgent('a');
    const b = await newAgent('b', { maxConcurrent: 5 });
    const d = await newAgent('d');
    const t = await runningTask(a, b, 'T');
    const c1 = await b.client.handoff({ to: b.id, title: 'C1, to itself', parentTaskId: t.id });
    const c2 = await b.client.claim((await b.client.handoff({ to: b.id, title: 'C2, to itself', parentTaskId: t.id })).id, { start: true });
    await b.client.fail(c2.id, c2.claim_token, 'did not work');
    // While B holds T, the children show it.
    expect((await b.client.ancestors(c1.id)).map((x) => x.id)).toEqual([t.id]);

    await a.client.reassign(t.id, d.id, 'moving it to d');
    const held = await d.client.claim(t.id, { start: true });
    await d.client.attachArtifact(t.id, 'secret.md', 'what d found');
    await d.client.complete(t.id, held.claim_token, { status: 'success', summary: 'd\'s summary' });

    expect(await b.client.ancestors(c1.id)).toEqual([]);
    expect((await b.client.inputs(c1.id)).map((x) => x.name)).not.toContain('secret.md');
    const chain = await b.client.chain(c1.id);
    expect(chain.map((r) => r.id)).not.toContain(t.id);
    expect(JSON.stringify(chain)).not.toContain('d\'s summary');
    await refusal(b.client.retry(c2.id), 'BT003');
    // D, who holds T now, and A, who sent it, still see all of it.
    expect((await a.client.chain(t.id)).map((r) => r.id)).toEqual(expect.arrayContaining([t.id, c1.id]));
  });
});

describe('a follow-up', () => {
  /** An agent holding `n` running tasks, with this minute's hand-offs spent. */
  async function spentHolder(n: number) {
    // Not across a minute's end, where the quota starts again.
    const left = 60 - new Date().getUTCSeconds();
    if (left < 15) await sleep(left * 1000 + 500);
    const sender = await newAgent('sender');
    const holder = await newAgent('holder', { maxConcurrent: n });
    const tasks = [];
    for (let i = 0; i < n; i += 1) tasks.push(await runningTask(sender, holder, `with a follow-up ${i}`));
    const sink = await newAgent('sink');
    const burnt = await holder.client.handoffMany(Array.from({ length: 600 }, (_, i) => ({ to: sink.id, title: `burn ${i}` })));
    expect(burnt.filter((x) => x.task_id)).toHaveLength(600);
    await refusal(holder.client.handoff({ to: sink.id, title: 'one too many' }), 'BT013');
    return { holder, sink, tasks };
  }
  const withFollowUp = (to: string) => ({ status: 'success' as const, handoff: { to_agent: to, title: 'follow-up' } });

  it('counts against the hand-off quota alone, in report_outcomes and in report_and_claim alike', async () => {
    const { holder, sink, tasks: [alone, batched, claimed] } = await spentHolder(3);
    await refusal(holder.client.complete(alone!.id, alone!.claim_token, withFollowUp(sink.id)), 'BT013');

    const [report] = await holder.client.reportOutcomes([{ taskId: batched!.id, claimToken: batched!.claim_token, result: withFollowUp(sink.id) }]);
    expect(report).toMatchObject({ status: null, code: 'BT013' });

    const both = await holder.client.reportAndClaim([{ taskId: claimed!.id, claimToken: claimed!.claim_token, result: withFollowUp(sink.id) }], { claim: 1 });
    expect(both.outcomes[0]).toMatchObject({ status: null, code: 'BT013' });

    // Nothing was completed, and no follow-up was made.
    for (const t of [alone!, batched!, claimed!]) expect((await holder.client.getTask(t.id)).status).toBe('in_progress');
    const made = await sink.client.listTasks({ box: 'mine', limit: 1000 });
    expect(made.filter((t) => t.title === 'follow-up')).toEqual([]);
  });
});

describe('a sender\'s hand-offs at once', () => {
  it('do not wait for each other to be counted against its quotas', async () => {
    const sender = await newAgent('busy');
    const sink = await newAgent('sink');
    // A connection counts in its own slot (its backend pid modulo 64): take two in different slots.
    const held = await Promise.all([1, 2, 3, 4].map(() => db.connect()));
    const slots = await Promise.all(held.map(async (c) => (await c.query<{ slot: number }>('select pg_backend_pid() % 64 as slot')).rows[0]!.slot));
    const second = slots.findIndex((slot) => slot !== slots[0]);
    expect(second).toBeGreaterThan(0);
    const [first, other] = [held[0]!, held[second]!];
    for (const c of held) if (c !== first && c !== other) c.release();
    const handoff = async (client: typeof first, title: string) => {
      await client.query('begin');
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true),
                                 set_config('lock_timeout', '10s', true)`, [JSON.stringify({ role: 'authenticated', agent_id: sender.id })]);
      await client.query('select public.handoff_task(p_title => $1, p_to_agent => $2)', [title, sink.id]);
    };
    try {
      // The first hand-off's transaction stays open, holding what it counted; the second is counted and
      // committed meanwhile (were it to wait for the first, its lock_timeout would fail it).
      await handoff(first, 'first, left open');
      await handoff(other, 'second, while the first is open');
      await other.query('commit');
      await first.query('commit');
    } finally {
      for (const c of [first, other]) {
        await c.query('rollback').catch(() => undefined);
        c.release();
      }
    }
    const { rows: [made] } = await db.query('select count(*)::int as n from task_handoffs where from_agent = $1', [sender.id]);
    expect(made.n).toBe(2);
  });
});

describe('every path that makes a task', () => {
  it('counts each task it makes against its sender\'s hand-offs, once', async () => {
    const left = 60 - new Date().getUTCSeconds();
    if (left < 15) await sleep(left * 1000 + 500);
    const boss = await newAgent('boss');
    const agent = await newAgent('counted', { maxConcurrent: 5 });
    const sink = await newAgent('sink');
    const used = async () => Number((await db.query(
      "select coalesce(sum(handoffs), 0) as n from agent_usage where agent_id = $1 and minute = date_trunc('minute', now())", [agent.id])).rows[0].n);
    const counts: Array<[string, number]> = [];
    const step = async (path: string, run: () => Promise<unknown>) => {
      const before = await used();
      await run();
      counts.push([path, (await used()) - before]);
    };
    await step('a single hand-off', () => agent.client.handoff({ to: sink.id, title: 'single' }));
    await step('a batch of three', () => agent.client.handoffMany([1, 2, 3].map((i) => ({ to: sink.id, title: `batch ${i}` }))));
    const [a, b, c] = [await runningTask(boss, agent, 'a'), await runningTask(boss, agent, 'b'), await runningTask(boss, agent, 'c')];
    await step('a follow-up, completed alone', () => agent.client.complete(a.id, a.claim_token, { status: 'success', handoff: { to_agent: sink.id, title: 'f1' } }));
    await step('a follow-up, in a batch report', () => agent.client.reportOutcomes([{ taskId: b.id, claimToken: b.claim_token, result: { status: 'success', handoff: { to_agent: sink.id, title: 'f2' } } }]));
    await step('a fan-out of two and its join', () => agent.client.fanOut(c.id, [{ to: sink.id, title: 'part 1' }, { to: sink.id, title: 'part 2' }]));
    const child = await sink.client.claim((await agent.client.handoff({ to: sink.id, title: 'to retry', parentTaskId: c.id })).id, { start: true });
    await sink.client.fail(child.id, child.claim_token, 'no');
    await step('a retry', () => agent.client.retry(child.id));
    expect(counts).toEqual([
      ['a single hand-off', 1], ['a batch of three', 3], ['a follow-up, completed alone', 1],
      ['a follow-up, in a batch report', 1], ['a fan-out of two and its join', 3], ['a retry', 1],
    ]);
  });
});
