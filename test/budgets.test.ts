/**
 * Budgets along a chain (task_budgets): set on a hand-off, shared by everything under the task
 * (follow-ups, fan-out parts, retries), spent as usage is reported, and enforced by the database on
 * every path that claims or starts work: a spent budget holds the work left and asks its sender (ask),
 * or fails it (fail, BT017). A child may carry a smaller budget, never more than is left above it.
 * Per-agent daily caps stop an agent's claims for the day (BT018).
 */
import { describe, expect, it } from 'vitest';
import type { BatonClient } from '../src/client/agent.js';
import type { Task } from '../src/schemas.js';
import { daemon, eventually } from './daemon-helpers.js';
import { cliAs, parsed } from './cli.js';
import { admin, newAgent, refusal, stack, untyped, type TestAgent } from './helpers.js';

const usage = (tokens: number, costUsd?: number) => ({ runtime: 'test', model: 'scripted', inputTokens: tokens, outputTokens: 0, ...(costUsd !== undefined ? { costUsd } : {}) });

/** Claims a task and reports that its run spent `tokens`; the claim stays held. */
async function spend(worker: TestAgent, task: Task, tokens: number, costUsd?: number): Promise<Task> {
  const held = await worker.client.claim(task.id, { start: true });
  await worker.client.recordUsage(task.id, held.claim_token, usage(tokens, costUsd));
  return held;
}

const budgetQuestion = async (client: BatonClient, taskId: string) =>
  (await client.messages({ taskId, kind: 'question' })).find((m) => (m.body as { budget?: unknown }).budget);

describe('a budget along a chain', () => {
  it('is spent by the chain\'s runs, holds the work left, asks the sender, and goes on when raised', async () => {
    const [sender, worker] = await Promise.all([newAgent('budget-sender'), newAgent('budget-worker')]);
    const root = await sender.client.handoff({ to: worker.id, title: 'root', budget: { tokens: 1000 } });
    expect(root.budget_id).toBe(root.id);
    const rootHeld = await spend(worker, root, 600);
    const child = await worker.client.handoff({ to: worker.id, title: 'child', parentTaskId: root.id });
    const grandchild = await worker.client.handoff({ to: worker.id, title: 'grandchild', parentTaskId: child.id });
    expect([child.budget_id, grandchild.budget_id]).toEqual([root.id, root.id]);
    expect(await worker.client.budget(grandchild.id)).toMatchObject({ tokens_left: 400, spent: false });
    await spend(worker, child, 500);

    // Spent (1100 of 1000): the grandchild is held, and no path claims it.
    const held = await worker.client.getTask(grandchild.id);
    expect(held.status).toBe('pending');
    expect(held.status_reason).toBe(`held: the budget on task ${root.id} is spent (1100 of 1000 tokens)`);
    await refusal(worker.client.claim(grandchild.id), 'BT017');
    expect(await worker.client.claimNext({ limit: 10 })).toEqual([]);
    const { data: batch } = await untyped(worker.client.db).rpc('report_and_claim', { p_outcomes: [], p_claim: 5 });
    expect(batch.claimed).toEqual([]);
    // Not even the operator's own write through REST.
    const { error } = await untyped(admin.db).from('task_handoffs').update({ status: 'claimed', claimed_by: worker.id }).eq('id', grandchild.id);
    expect(error?.code).toBe('BT017');
    // A new hand-off under it waits too.
    const late = await worker.client.handoff({ to: worker.id, title: 'late', parentTaskId: rootHeld.id });
    await refusal(worker.client.claim(late.id), 'BT017');

    // The sender is asked, once, on the task that carries the budget.
    const asked = await eventually(() => budgetQuestion(sender.client, root.id), 10_000, 'the question to the sender');
    expect(asked).toMatchObject({ from_agent: worker.id, to_agent: sender.id });
    expect((asked.body as { text: string }).text).toContain('spent 1100 of 1000 tokens: raise its budget');
    await refusal(worker.client.setBudget(root.id, { tokens: 5000 }), 'BT003');
    await sender.client.setBudget(root.id, { tokens: 3000 });
    const [answer] = await sender.client.messages({ taskId: root.id, kind: 'answer' });
    expect(answer).toMatchObject({ reply_to_id: asked.id, from_agent: sender.id, to_agent: worker.id });
    const going = await worker.client.claim(grandchild.id, { start: true });
    expect(going.status).toBe('in_progress');
    expect(await worker.client.budget(grandchild.id)).toMatchObject({ tokens_left: 1900, spent: false });
  });

  it('stops a loop of two agents handing the same work back and forth before its depth limit', async () => {
    const [sender, ping, pong] = await Promise.all([newAgent('loop-sender'), newAgent('loop-ping'), newAgent('loop-pong')]);
    let task = await sender.client.handoff({ to: ping.id, title: 'bounce', budget: { tokens: 1000 } });
    const hops: string[] = [];
    for (let i = 0; i < 20; i++) {
      const [me, other] = i % 2 ? [pong, ping] : [ping, pong];
      const claimed = await me.client.claim(task.id, { start: true }).catch((err: { code?: string }) => err);
      if ('code' in claimed && claimed.code === 'BT017') break;
      const held = claimed as Task;
      await me.client.recordUsage(task.id, held.claim_token, usage(300));
      task = await me.client.handoff({ to: other.id, title: 'bounce', parentTaskId: task.id });
      hops.push(task.id);
    }
    // 300 a hop: the fourth run spends it, and the task it handed on is held, at depth 4.
    expect(hops.length).toBe(4);
    expect((await ping.client.getTask(task.id)).depth).toBe(4);
    expect((await ping.client.budget(task.id))).toMatchObject({ spent: true, tokens_left: 0 });
    // Its sender is asked, on the task that carries the budget.
    expect(await budgetQuestion(sender.client, (await ping.client.getTask(task.id)).root_task_id ?? task.id)).toBeDefined();
  });

  it('is shared by a fan-out\'s parts and by a retry, and a child never asks for more than is left', async () => {
    const [sender, worker] = await Promise.all([newAgent('fan-sender'), newAgent('fan-worker')]);
    const parent = await sender.client.handoff({ to: worker.id, title: 'parent', budget: { usd: 1 } });
    const parentHeld = await worker.client.claim(parent.id, { start: true });
    await worker.client.recordUsage(parent.id, parentHeld.claim_token, usage(10, 0.3));
    // What is left is $0.70: a part may take less, never more.
    await expect(worker.client.fanOut(parent.id, [{ to: worker.id, title: 'greedy', budget: { usd: 0.8 } }]))
      .rejects.toMatchObject({ code: 'BT017', message: expect.stringContaining('asks for $0.80 more, but its chain has $0.70 left') });
    const fan = await worker.client.fanOut(parent.id, [
      { to: worker.id, title: 'part a', budget: { usd: 0.5 } },
      { to: worker.id, title: 'part b' },
    ]);
    const [a, b] = await Promise.all(fan.tasks.map((id) => worker.client.getTask(id)));
    expect([a!.budget_id, b!.budget_id]).toEqual([a!.id, parent.id]);
    // Part a spends its own $0.50 and so the parent's too: part b, under the parent alone, is held.
    await spend(worker, a!, 10, 0.5);
    expect((await worker.client.budget(a!.id))?.spent).toBe(true);
    const bLeft = await worker.client.budget(b!.id);
    expect(bLeft?.usd_left).toBeCloseTo(0.2, 6);
    await spend(worker, b!, 10, 0.2);
    expect((await worker.client.budget(fan.join))?.spent).toBe(true);

    // A retry of a failed task draws on the same budget.
    const once = await sender.client.handoff({ to: worker.id, title: 'once', maxAttempts: 1, budget: { tokens: 100 } });
    const onceHeld = await spend(worker, once, 60);
    await worker.client.fail(once.id, onceHeld.claim_token, 'broke');
    const retry = await sender.client.retry(once.id);
    expect(retry.budget_id).toBe(once.id);
    await spend(worker, retry, 50);
    expect(await sender.client.budget(retry.id)).toMatchObject({ spent: true, tokens_left: 0, budgets: [expect.objectContaining({ tokens_spent: 110 })] });
  });

  it('fails the work left with BT017 when its sender said so', async () => {
    const [sender, worker] = await Promise.all([newAgent('fail-sender'), newAgent('fail-worker')]);
    const root = await sender.client.handoff({ to: worker.id, title: 'root', budget: { tokens: 100, onSpent: 'fail' } });
    const held = await worker.client.claim(root.id, { start: true });
    const waiting = await worker.client.handoff({ to: worker.id, title: 'waiting', parentTaskId: root.id });
    await worker.client.recordUsage(root.id, held.claim_token, usage(150));
    const failed = await worker.client.getTask(waiting.id);
    expect(failed.status).toBe('failed');
    expect(failed.status_reason).toBe(`BT017: the budget on task ${root.id} is spent (150 of 100 tokens)`);
    // Handed on later: failed as it is made; the sender is asked nothing.
    const later = await worker.client.handoff({ to: worker.id, title: 'later', parentTaskId: root.id });
    expect(later.status).toBe('failed');
    expect(await budgetQuestion(sender.client, root.id)).toBeUndefined();
    // The run that spent it, handed back, fails too instead of waiting.
    await worker.client.fail(root.id, held.claim_token, 'stopped', { retry: true });
    expect((await worker.client.getTask(root.id)).status).toBe('failed');
  });

  it('stops a run whose usage spends it, with the reason, and holds the task for the raise', async () => {
    const [sender, worker] = await Promise.all([newAgent('run-sender'), newAgent('run-worker')]);
    const seen: Array<{ left: unknown; env: string | undefined }> = [];
    await daemon(worker, {
      executors: {
        '*': async (_task, ctx) => {
          seen.push({ left: { ...ctx.budget }, env: ctx.env.BATON_BUDGET_TOKENS_LEFT });
          await ctx.usage(usage(700));
          await ctx.usage(usage(700));
          // Spent: the signal fires with the reason; an executor that streams usage stops here.
          await new Promise((resolve) => { if (ctx.signal.aborted) resolve(undefined); ctx.signal.addEventListener('abort', resolve); });
          throw ctx.signal.reason;
        },
      },
    });
    const task = await sender.client.handoff({ to: worker.id, title: 'spender', budget: { tokens: 1000 } });
    const held = await eventually(async () => {
      const t = await sender.client.getTask(task.id);
      return t.status === 'pending' && t.status_reason?.startsWith('held:') && t;
    }, 30_000, 'the run to be stopped and the task held');
    expect(held.attempts).toBe(1);
    expect(seen[0]).toEqual({ left: { tokens: 1000 }, env: '1000' });
    const events = await sender.client.events(task.id);
    expect(events.find((e) => e.from_status === 'in_progress' && e.to_status === 'pending')?.note)
      .toContain(`the budget on task ${task.id} is spent (1400 of 1000 tokens)`);
    await sender.client.setBudget(task.id, { tokens: 1_000_000 });
    await eventually(async () => seen.length === 2 && seen, 30_000, 'the task to run again once raised');
    expect(seen[1]!.left).toEqual({ tokens: 1_000_000 - 1400 });
  });
});

describe('setting a budget', () => {
  it('changes only the limits it names, through the client and the CLI', async () => {
    const [sender, worker] = await Promise.all([newAgent('raise-sender'), newAgent('raise-worker')]);
    const task = await sender.client.handoff({ to: worker.id, title: 'two limits', budget: { tokens: 2_000_000, usd: 5 } });
    await spend(worker, task, 100, 0.25);
    await sender.client.setBudget(task.id, { tokens: 3_000_000 });
    expect(await sender.client.budget(task.id)).toMatchObject({ tokens_left: 3_000_000 - 100, usd_left: 4.75 });
    await sender.client.setBudget(task.id, { usd: 8 });
    expect(await sender.client.budget(task.id)).toMatchObject({ tokens_left: 3_000_000 - 100, usd_left: 7.75 });
    const cli = cliAs(sender.token, stack);
    expect(parsed<{ tokens_left: number; usd_left: number }>(await cli('budget', task.id, '--tokens', '4M', '--json')))
      .toMatchObject({ tokens_left: 4_000_000 - 100, usd_left: 7.75 });
    expect(parsed<{ tokens_left: number; usd_left: number }>(await cli('budget', task.id, '--usd', '9', '--json')))
      .toMatchObject({ tokens_left: 4_000_000 - 100, usd_left: 8.75 });
    // The policy alone changes neither limit.
    await sender.client.setBudget(task.id, { onSpent: 'fail' });
    const [own] = (await sender.client.budget(task.id))!.budgets;
    expect(own).toMatchObject({ tokens_limit: 4_000_000, usd_limit: 9, on_spent: 'fail' });
  });

  it('keeps a limit it does not name even when the chain above has less left now', async () => {
    const [sender, worker] = await Promise.all([newAgent('keep-sender'), newAgent('keep-worker')]);
    const root = await sender.client.handoff({ to: worker.id, title: 'root', budget: { tokens: 1000, usd: 10 } });
    const held = await worker.client.claim(root.id, { start: true });
    const child = await worker.client.handoff({ to: worker.id, title: 'child', parentTaskId: root.id, budget: { tokens: 800, usd: 1 } });
    await worker.client.recordUsage(root.id, held.claim_token, usage(500));
    // The chain has 500 tokens left, the child's own limit is 800: raising its money keeps its tokens.
    await worker.client.setBudget(child.id, { usd: 2 });
    expect((await worker.client.budget(child.id))!.budgets.find((b) => b.task_id === child.id)).toMatchObject({ tokens_limit: 800, usd_limit: 2 });
  });
});

describe('a budget\'s stop, whatever the executor or the question does', () => {
  it('keeps the outcome the budget\'s when an executor returns after its run was stopped', async () => {
    const [sender, worker] = await Promise.all([newAgent('stop-sender'), newAgent('stop-worker')]);
    await daemon(worker, {
      executors: {
        '*': async (_task, ctx) => {
          await ctx.usage(usage(1500));
          // As docs/daemon.md shows an executor that honours its signal: it returns.
          if (ctx.signal.aborted) return { status: 'success', summary: 'returned anyway' };
          return { status: 'success', summary: 'never here' };
        },
      },
    });
    const task = await sender.client.handoff({ to: worker.id, title: 'returns when stopped', budget: { tokens: 1000 } });
    const held = await eventually(async () => {
      const t = await sender.client.getTask(task.id);
      return t.status !== 'in_progress' && t.status !== 'claimed' && t.status !== 'pending' ? t : t.status_reason?.startsWith('held:') && t;
    }, 30_000, 'the stopped run to be reported');
    expect(held.status, held.status_reason ?? '').toBe('pending');
    expect(held.status_reason).toBe(`held: the budget on task ${task.id} is spent (1500 of 1000 tokens)`);
    expect(held.result).toBeNull();
  });

  for (const onSpent of ['ask', 'fail'] as const) {
    it(`ends a run stopped while its question is open ${onSpent === 'ask' ? 'held' : 'failed'}, as the sender chose (${onSpent}), in either order`, async () => {
      const [sender, worker] = await Promise.all([newAgent(`qstop-sender-${onSpent}`), newAgent(`qstop-worker-${onSpent}`)]);
      await daemon(worker, {
        executors: {
          // As a coding agent does: its shell runs `baton ask` (the same RPC, as the agent), the CLI
          // exits, and the daemon reads what the run spent; then it would wait for the answer.
          'ask-first': async (task, ctx) => {
            await worker.client.ask(task.id, 'which file?');
            await ctx.usage(usage(20_000), { ended: true });
            const answer = await ctx.answered();
            return { status: 'success', summary: `answered: ${answer}` };
          },
          // The stop first: a question after it is refused, and nothing waits.
          'stop-first': async (_task, ctx) => {
            await ctx.usage(usage(20_000));
            const answer = await ctx.ask('which file?');
            return { status: 'success', summary: `answered: ${answer}` };
          },
        },
      });
      for (const kind of ['ask-first', 'stop-first']) {
        const task = await sender.client.handoff({ to: worker.id, title: kind, payload: { task_type: kind }, budget: { tokens: 1000, onSpent } });
        const ended = await eventually(async () => {
          const t = await sender.client.getTask(task.id);
          return (t.status === 'failed' || (t.status === 'pending' && t.status_reason?.startsWith('held:'))) && t;
        }, 30_000, `${kind}: the task to be ${onSpent === 'ask' ? 'held' : 'failed'}`);
        const why = `the budget on task ${task.id} is spent (20000 of 1000 tokens)`;
        expect(ended.status, kind).toBe(onSpent === 'ask' ? 'pending' : 'failed');
        expect(ended.status_reason, kind).toBe(onSpent === 'ask' ? `held: ${why}` : `BT017: ${why}`);
        // No answer resumes a run that is gone.
        await refusal(sender.client.answer(task.id, 'src/main.ts'), 'BT001');
        expect((await sender.client.getTask(task.id)).status, kind).toBe(ended.status);
      }
    });
  }
});

describe('a daily cap per agent', () => {
  it('stops the agent\'s claims for the day once its runs spent it', async () => {
    const [sender, worker] = await Promise.all([newAgent('cap-sender'), newAgent('cap-worker')]);
    const { error } = await untyped(admin.db).from('agents').update({ daily_token_cap: 500 }).eq('id', worker.id);
    expect(error).toBeNull();
    const first = await sender.client.handoff({ to: worker.id, title: 'first' });
    const second = await sender.client.handoff({ to: worker.id, title: 'second' });
    await spend(worker, first, 600);
    await refusal(worker.client.claim(second.id), 'BT018');
    expect(await worker.client.claimNext({ limit: 5 })).toEqual([]);
    // An agent cannot lift its own cap.
    const { error: own } = await untyped(worker.client.db).from('agents').update({ daily_token_cap: null, spend_capped_until: null }).eq('id', worker.id);
    expect(own).not.toBeNull();
    await untyped(admin.db).from('agents').update({ daily_token_cap: null, spend_capped_until: null }).eq('id', worker.id);
    expect((await worker.client.claim(second.id)).status).toBe('claimed');
  });

  it('counts what other agents spent on an agent\'s behalf: at the cap it neither claims nor hands work on', async () => {
    const [lead, worker, other] = await Promise.all([newAgent('behalf-lead'), newAgent('behalf-worker'), newAgent('behalf-other')]);
    await untyped(admin.db).from('agents').update({ daily_token_cap: 500 }).eq('id', lead.id);
    const work = await lead.client.handoff({ to: worker.id, title: 'on the lead\'s behalf' });
    const forLead = await other.client.handoff({ to: lead.id, title: 'for the lead to do' });
    await spend(worker, work, 600);
    // The worker's day has its own run; the lead's has it on its behalf.
    const { data: days } = await untyped(admin.db).from('agent_daily_spend').select('agent_id, tokens, behalf_tokens').in('agent_id', [lead.id, worker.id]);
    expect(days).toEqual(expect.arrayContaining([
      { agent_id: worker.id, tokens: 600, behalf_tokens: 0 },
      { agent_id: lead.id, tokens: 0, behalf_tokens: 600 },
    ]));
    // At its cap, the lead hands nothing on by any path, and claims nothing; its worker goes on.
    await refusal(lead.client.handoff({ to: worker.id, title: 'more' }), 'BT018');
    expect(await lead.client.handoffMany([{ to: worker.id, title: 'more, in a batch' }])).toEqual([expect.objectContaining({ index: 0, code: 'BT018' })]);
    await refusal(lead.client.claim(forLead.id), 'BT018');
    const again = await lead.client.handoff({ to: worker.id, title: 'not yet' }).catch((err: Error) => err);
    expect((again as Error).message).toMatch(/reached its daily cap of spend and hands no work on until/);
    // The worker at its own cap completes what it holds, with the follow-up it names.
    await untyped(admin.db).from('agents').update({ daily_token_cap: 100 }).eq('id', worker.id);
    await refusal(worker.client.handoff({ to: lead.id, title: 'from a capped worker' }), 'BT018');
    const done = await worker.client.complete(work.id, (await worker.client.getTask(work.id)).claim_token!, { status: 'success', summary: 'done', handoff: { to_agent: lead.id, title: 'review it' } });
    expect(done.status).toBe('completed');
    expect((await lead.client.chain(work.id)).map((t) => t.title)).toContain('review it');
    // The operator raises it above the day so far: the lead goes on at once.
    await untyped(admin.db).from('agents').update({ daily_token_cap: 10_000 }).eq('id', lead.id);
    expect((await lead.client.handoff({ to: worker.id, title: 'lifted' })).status).toBe('pending');
  });
});

describe('who may read spend', () => {
  it('shows a chain\'s budget and spend to whoever may see the task, and nothing to a stranger', async () => {
    const [sender, worker, stranger] = await Promise.all([newAgent('read-sender'), newAgent('read-worker'), newAgent('read-stranger')]);
    const root = await sender.client.handoff({ to: worker.id, title: 'root', budget: { tokens: 10_000 } });
    await spend(worker, root, 1234, 0.5);
    expect(await sender.client.budget(root.id)).toMatchObject({ tokens_left: 8766 });
    await refusal(stranger.client.budget(root.id), 'BT002');
    const { data } = await untyped(stranger.client.db).from('task_budgets').select('*').eq('task_id', root.id);
    expect(data).toEqual([]);
    expect(await stranger.client.spend({ taskId: root.id })).toEqual([]);
    expect(await stranger.client.spend({ agent: worker.id })).toEqual([]);
    const mine = await sender.client.spend({ taskId: root.id });
    expect(mine).toEqual([expect.objectContaining({ agent_id: worker.id, model: 'scripted', runs: 1, input_tokens: 1234, cost_usd: 0.5 })]);
  });
});
