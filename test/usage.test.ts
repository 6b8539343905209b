/**
 * What runs spend (task_runs): who may record it (the holder of the claim; the last holder of a final
 * task), which attempt it lands on (the task's, never the caller's word), who may read it, and a
 * chain's total (chain_usage) for whoever may see the task, and nobody else.
 */
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/stack/ports.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, refusal, untyped } from './helpers.js';

const spend = { runtime: 'claude', model: 'claude-sonnet-4-5', inputTokens: 100, outputTokens: 10, cachedTokens: 5, turns: 1, costUsd: 0.01 };

describe('usage of runs', () => {
  it('is recorded by the holder on its attempt, added up per model, and read by the sender and nobody else', async () => {
    const [sender, worker, stranger] = await Promise.all([newAgent('spend-sender'), newAgent('spend-worker'), newAgent('spend-stranger')]);
    const task = await sender.client.handoff({ to: worker.id, title: 'spend', allowOffline: true });
    const held = await worker.client.claim(task.id, { start: true });
    await refusal(stranger.client.recordUsage(task.id, held.claim_token, spend), 'BT002');
    await refusal(worker.client.recordUsage(task.id, '00000000-0000-0000-0000-000000000001', spend), 'BT007');
    await worker.client.recordUsage(task.id, held.claim_token, { ...spend, sessionId: 's-1' });
    const second = await worker.client.recordUsage(task.id, held.claim_token, spend);
    expect(second).toMatchObject({ attempt: 1, input_tokens: 200, output_tokens: 20, cached_tokens: 10, turns: 2, cost_usd: 0.02, reports: 2, session_id: 's-1', agent_id: worker.id });
    // A retry is a new attempt, a row of its own.
    await worker.client.fail(task.id, held.claim_token, 'again', { retry: true });
    // Claimable again once its backoff is over.
    const again = await eventually(() => worker.client.claim(task.id, { start: true }).catch(() => undefined), 30_000, 'the retry to be claimable');
    await worker.client.recordUsage(task.id, again.claim_token, { ...spend, model: 'claude-haiku-4-5', costUsd: undefined });
    // Cancelled while it ran: what the run spent is still recorded, by the agent that held it.
    await sender.client.cancel(task.id, 'enough');
    await worker.client.recordUsage(task.id, again.claim_token, { ...spend, model: 'claude-haiku-4-5', costUsd: undefined });
    await refusal(stranger.client.recordUsage(task.id, null, spend), 'BT002');
    await refusal(sender.client.recordUsage(task.id, null, spend), 'BT003');
    const runs = await sender.client.runs(task.id);
    expect(runs.map((r) => [r.attempt, r.model, r.input_tokens, r.cost_usd])).toEqual([[1, 'claude-sonnet-4-5', 200, 0.02], [2, 'claude-haiku-4-5', 200, null]]);
    expect(await stranger.client.runs(task.id)).toEqual([]);
  });

  it('refuses negative counts, and sums a chain for whoever may see its task, and for nobody else', async () => {
    const [sender, worker, stranger] = await Promise.all([newAgent('chain-sender'), newAgent('chain-worker'), newAgent('chain-stranger')]);
    const root = await sender.client.handoff({ to: worker.id, title: 'root', allowOffline: true });
    const held = await worker.client.claim(root.id, { start: true });
    await refusal(worker.client.recordUsage(root.id, held.claim_token, { ...spend, inputTokens: -1 }), 'BT005');
    // The database's own rule, for a caller that skips the client's check.
    const { error } = await untyped(worker.client.db).rpc('record_usage', { p_task_id: root.id, p_claim_token: held.claim_token, p_runtime: 'x', p_model: 'y', p_input_tokens: -5 });
    expect(error?.code).toBe('BT005');
    await worker.client.recordUsage(root.id, held.claim_token, spend);
    const child = await worker.client.handoff({ to: worker.id, title: 'child', parentTaskId: root.id, allowOffline: true });
    const childHeld = await worker.client.claim(child.id, { start: true });
    await worker.client.recordUsage(child.id, childHeld.claim_token, { ...spend, inputTokens: 1 });
    const chain = await sender.client.chainUsage(root.id);
    expect(chain).toEqual([expect.objectContaining({ model: 'claude-sonnet-4-5', tasks: 2, attempts: 2, input_tokens: 101, output_tokens: 20, cost_usd: 0.02 })]);
    expect(await worker.client.chainUsage(child.id)).toEqual([expect.objectContaining({ tasks: 1, input_tokens: 1 })]);
    await refusal(stranger.client.chainUsage(root.id), 'BT002');
  });

  it('is counted in the daemon\'s Prometheus metrics, by model and kind', async () => {
    const [sender, worker] = await Promise.all([newAgent('metrics-sender'), newAgent('metrics-worker')]);
    const metricsPort = await freePort();
    await daemon(worker, {
      metricsPort,
      executors: {
        '*': async (_task, ctx) => {
          await ctx.usage({ runtime: 'claude', model: 'claude-sonnet-4-5', inputTokens: 1200, outputTokens: 34, cachedTokens: 5, turns: 2, costUsd: 0.25 });
          await ctx.usage({ runtime: 'claude', model: 'claude-haiku-4-5', inputTokens: 7, outputTokens: 1 });
          return 'spent';
        },
      },
    });
    const task = await sender.client.handoff({ to: worker.id, title: 'count me' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'completed', 30_000, 'the task to complete');
    const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    /** A sample's value, its labels in any order. */
    const value = (name: string, labels: string) => {
      const wanted = labels.split(',');
      const line = scraped.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
      return Number(line?.split(' ').at(-1));
    };
    expect(value('baton_tokens_total', `agent="${worker.id}",model="claude-sonnet-4-5",kind="input"`)).toBe(1200);
    expect(value('baton_tokens_total', `agent="${worker.id}",model="claude-sonnet-4-5",kind="output"`)).toBe(34);
    expect(value('baton_tokens_total', `agent="${worker.id}",model="claude-sonnet-4-5",kind="cached"`)).toBe(5);
    expect(value('baton_tokens_total', `agent="${worker.id}",model="claude-haiku-4-5",kind="input"`)).toBe(7);
    expect(value('baton_cost_usd_total', `agent="${worker.id}",model="claude-sonnet-4-5"`)).toBe(0.25);
    expect((await sender.client.runs(task.id)).map((r) => r.model)).toEqual(['claude-haiku-4-5', 'claude-sonnet-4-5']);
  });
});
