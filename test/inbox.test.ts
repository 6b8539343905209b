/** The inbox (`baton tasks`, listTasks({ box: 'mine' }), the RPC my_tasks): what it lists, in which order. */
import { describe, expect, it } from 'vitest';
import { openStatuses } from '../src/index.js';
import { newAgent, refusal, runningTask, uniqueId } from './helpers.js';

describe('the inbox', async () => {
  const sender = await newAgent('inbox-sender');
  const capability = uniqueId('inbox-cap');
  const worker = await newAgent('inbox-worker', { capabilities: [capability], maxConcurrent: 10 });
  const other = await newAgent('inbox-other', { capabilities: [capability] });

  // Addressed and waiting, addressed and held, a broadcast it holds, one it finished, and work of others.
  const waiting = await sender.client.handoff({ to: worker.id, title: 'waiting, low', priority: 'low' });
  const urgent = await sender.client.handoff({ to: worker.id, title: 'waiting, urgent', priority: 'urgent' });
  const held = await runningTask(sender, worker, 'held, medium');
  const broadcast = await sender.client.broadcast({ title: 'broadcast it holds, high', priority: 'high', requiredCapabilities: [capability] });
  const [heldBroadcast] = await worker.client.claimNext({ start: true, capabilities: [capability] });
  const finished = await runningTask(sender, worker, 'finished');
  await worker.client.complete(finished.id, finished.claim_token);
  await sender.client.handoff({ to: other.id, title: "another agent's" });
  await sender.client.broadcast({ title: 'a broadcast nobody holds yet', requiredCapabilities: [capability] });

  it('lists the open tasks addressed to the agent or held by it, highest priority first, then oldest', async () => {
    expect(heldBroadcast?.id).toBe(broadcast.id);
    const inbox = await worker.client.listTasks({ box: 'mine', status: [...openStatuses] });
    expect(inbox.map((t) => t.title)).toEqual(['waiting, urgent', 'broadcast it holds, high', 'held, medium', 'waiting, low']);
    expect(inbox.map((t) => t.id)).toEqual([urgent.id, broadcast.id, held.id, waiting.id]);
  });

  it('keeps to the statuses and the limit asked for', async () => {
    expect((await worker.client.listTasks({ box: 'mine', status: ['in_progress'] })).map((t) => t.title))
      .toEqual(['broadcast it holds, high', 'held, medium']);
    expect((await worker.client.listTasks({ box: 'mine', status: [...openStatuses], limit: 2 })).map((t) => t.id))
      .toEqual([urgent.id, broadcast.id]);
  });

  it('lists finished tasks when asked for them, and every task of the agent when no status is named', async () => {
    expect((await worker.client.listTasks({ box: 'mine', status: ['completed'] })).map((t) => t.id)).toEqual([finished.id]);
    expect((await worker.client.listTasks({ box: 'mine' })).map((t) => t.id))
      .toEqual([urgent.id, broadcast.id, held.id, finished.id, waiting.id]);
    expect(await other.client.listTasks({ box: 'mine', status: ['completed'] })).toEqual([]);
  });

  it('refuses a listing of no tasks or of more than 1000, saying what to ask for', async () => {
    const none = await refusal(worker.client.listTasks({ box: 'mine', limit: 0 }), 'BT005');
    expect(none.hint).toMatch(/Ask for fewer/);
    await refusal(worker.client.listTasks({ box: 'mine', limit: 1001 }), 'BT005');
  });
});
