/**
 * One worker per agent, whatever its version (issue 64, findings 4 and 5): while a daemon that names its
 * process (an incarnation) runs as the agent, a caller that names none (a daemon from before
 * incarnations, or a command by hand) cannot claim the agent's work; its claims from before the daemon
 * began were handed back as it began, so none outlives it. A daemon that stops cleanly ends its
 * incarnation; one that was killed leaves it until the agent goes offline.
 */
import { describe, expect, it } from 'vitest';
import { createBatonClient } from '../src/client/agent.js';
import { agentKey } from './keys-mode.js';
import { database, newAgent, refusal, stack, type TestAgent } from './helpers.js';

/** A second client of the same agent: a daemon's process, which names its incarnation once begun. */
const processOf = (agent: TestAgent) => createBatonClient({ url: stack.SUPABASE_URL, ...agentKey(stack), token: agent.token });

describe('a caller that names no process, beside a daemon that does', () => {
  const db = database();

  it('cannot claim while the daemon runs, has its earlier claims handed back, and claims again once the daemon stopped', async () => {
    const [sender, worker] = await Promise.all([newAgent('one-sender'), newAgent('one-worker')]);
    const [before, during, after] = await Promise.all(['before', 'during', 'after'].map((title) => sender.client.handoff({ to: worker.id, title })));
    // The old process (no incarnation) holds a task when the new daemon begins.
    const held = await worker.client.claim(before!.id, { start: true });
    const daemon = processOf(worker);
    const begun = await daemon.beginIncarnation();
    daemon.incarnation = begun.incarnation;
    await daemon.heartbeat(undefined, { incarnation: begun.incarnation });
    // Its claim went back as the daemon began: it does not live on by the daemon's heartbeats.
    expect((await sender.client.getTask(before!.id)).status).toBe('pending');
    await expect(worker.client.complete(before!.id, held.claim_token, { status: 'success' })).rejects.toMatchObject({ code: expect.stringMatching(/^BT00[37]$/) });
    // And it claims nothing while the daemon runs, one by one or in a batch.
    const refused = await refusal(worker.client.claim(during!.id), 'BT016');
    expect(refused.message).toContain('a caller that names no process cannot claim its work meanwhile');
    expect(refused.hint).toContain('stop it (docs/upgrading.md)');
    await refusal(worker.client.claimNext({ limit: 5 }), 'BT016');
    // What it may still do: read, hand off, beat.
    await worker.client.heartbeat();
    expect((await worker.client.handoff({ to: sender.id, title: 'still handing off' })).status).toBe('pending');
    // The daemon claims as before.
    expect((await daemon.claim(during!.id)).claimed_by).toBe(worker.id);
    // It stops cleanly: its incarnation ends, and a command by hand claims at once.
    await daemon.heartbeat(undefined, { active: false, incarnation: begun.incarnation });
    expect((await worker.client.claim(after!.id)).claimed_by).toBe(worker.id);
  });

  it('claims as before after `baton status --restarted`, which begins a process by hand', async () => {
    const [sender, worker] = await Promise.all([newAgent('hand-sender'), newAgent('hand-worker')]);
    const task = await sender.client.handoff({ to: worker.id, title: 'by hand' });
    await worker.client.beginIncarnation();
    await worker.client.heartbeat();
    expect((await worker.client.claim(task.id)).claimed_by).toBe(worker.id);
  });

  it('claims again once a killed daemon\'s agent has gone offline', async () => {
    const [sender, worker] = await Promise.all([newAgent('killed-sender'), newAgent('killed-worker')]);
    const task = await sender.client.handoff({ to: worker.id, title: 'after the daemon died' });
    const daemon = processOf(worker);
    const begun = await daemon.beginIncarnation();
    await daemon.heartbeat(undefined, { incarnation: begun.incarnation });
    await refusal(worker.client.claim(task.id), 'BT016');
    // Killed: no more beats. Once the agent is offline (here: its last beat long ago), the next caller
    // that names no process ends the dead daemon's incarnation, and claims.
    await db.query(`update agents set last_heartbeat = now() - interval '1 hour' where id = $1`, [worker.id]);
    await worker.client.heartbeat();
    expect((await worker.client.claim(task.id)).claimed_by).toBe(worker.id);
    const [row] = (await db.query<{ incarnation: string | null }>('select incarnation from agents where id = $1', [worker.id])).rows;
    expect(row!.incarnation).toBeNull();
  });
});
