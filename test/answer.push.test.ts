/**
 * A run waiting for its answer hears of it by push, as the daemon hears of work: it does not look for
 * the answer every second while push is up (it still does, as a safety net, every askSafetySeconds).
 * The daemon reaches the API through a proxy that counts its looks for an answer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { daemon, eventually } from './daemon-helpers.js';
import { FaultProxy } from './fault-proxy.js';
import { newAgent, stack } from './helpers.js';

const api = new URL(stack.SUPABASE_URL);
const proxy = new FaultProxy({ host: api.hostname, port: Number(api.port) });
afterAll(() => proxy.close());

describe('a question\'s answer', () => {
  it('wakes the run that asked by push, without a look every second meanwhile', async () => {
    const port = await proxy.listen();
    const [lead, worker] = await Promise.all([newAgent('answer-lead'), newAgent('answer-worker')]);
    const { instance } = await daemon(worker, {
      url: `http://127.0.0.1:${port}`,
      executors: { '*': async (_task, ctx) => ({ status: 'success', summary: `painted ${await ctx.ask('Which colour?')}` }) },
    });
    const task = await lead.client.handoff({ to: worker.id, title: 'paint it' });
    await eventually(async () => (await lead.client.getTask(task.id)).status === 'input_required', 60_000, 'the question');
    await eventually(async () => (instance as unknown as { push?: { up: boolean } }).push?.up, 60_000, 'push to be up');
    proxy.watch('answer looks', /^GET \/rest\/v1\/agent_messages\?.*kind=eq\.answer/);
    // Looked for once a second before, four or more times in these four seconds; now at most once.
    await sleep(4000);
    expect(proxy.seen('answer looks')).toBeLessThanOrEqual(1);
    await lead.client.answer(task.id, 'blue');
    const done = await eventually(async () => { const t = await lead.client.getTask(task.id); return t.status === 'completed' && t; }, 60_000, 'the task to complete');
    expect(done.result?.summary).toBe('painted blue');
    expect(proxy.seen('answer looks')).toBeGreaterThanOrEqual(1);
  });
});
