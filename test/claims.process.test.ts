/**
 * A claim belongs to the process that made it, in the database: a daemon names its incarnation on every
 * request, and acts only on its own claims; a superseded process can claim nothing, and its claims hold
 * only until their leases end, whatever another process of the agent does; the process a later one
 * superseded stops at once, listening or polling.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createBatonClient, type BatonClient } from '../src/client/agent.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, refusal, stack, type TestAgent } from './helpers.js';
import { agentKey } from './keys-mode.js';

const db = new pg.Pool({ connectionString: stack.DATABASE_URL, max: 2 });
afterAll(() => db.end());

/** A client of `agent` that begins as a process of its own, as a daemon does. */
async function process_(agent: TestAgent): Promise<BatonClient> {
  const client = createBatonClient({ url: stack.SUPABASE_URL, ...agentKey(stack), token: agent.token });
  client.incarnation = (await client.beginIncarnation()).incarnation;
  return client;
}

describe('a claim belongs to the process that made it', () => {
  it('refuses a superseded process that releases, renews or completes its successor\'s claim with a token read back', async () => {
    const boss = await newAgent('boss');
    const bot = await newAgent('twin');
    const first = await process_(bot);
    const second = await process_(bot);
    const task = await boss.client.handoff({ to: bot.id, title: 'claimed by the second process' });
    const [claimed] = await second.claimNext({ start: true });
    expect(claimed).toMatchObject({ id: task.id, claim_incarnation: second.incarnation });
    // The first process, heard again, reads the agent's claims back, token and all (as its reconciliation did).
    const [seen] = (await first.listTasks({ box: 'mine', status: ['in_progress'] })).filter((t) => t.id === task.id);
    expect(seen?.claim_token).toBe(claimed!.claim_token);
    await refusal(first.release(task.id, seen!.claim_token, 'the answer to my claim was lost'), 'BT007');
    await refusal(first.complete(task.id, seen!.claim_token), 'BT007');
    const [renewed] = await first.checkClaims([{ taskId: task.id, claimToken: seen!.claim_token! }], { renew: true });
    expect(renewed).toMatchObject({ current: false });
    // Nor can it claim anything any more.
    await boss.client.handoff({ to: bot.id, title: 'not for the superseded process' });
    await refusal(first.claimNext({ start: true }), 'BT016');
    // The second process's claim is untouched, and its outcome is recorded.
    const done = await second.complete(task.id, claimed!.claim_token, { status: 'success', summary: 'mine' });
    expect(done).toMatchObject({ status: 'completed', result: { summary: 'mine' } });
  });

  it('leaves a claim made by hand to the hand: a daemon\'s process can neither release nor renew it', async () => {
    const boss = await newAgent('boss');
    const bot = await newAgent('hand');
    const daemonProcess = await process_(bot);
    const task = await boss.client.handoff({ to: bot.id, title: 'claimed by hand beside the daemon' });
    const byHand = await bot.client.claim(task.id, { start: true });
    expect(byHand.claim_incarnation).toBeNull();
    await refusal(daemonProcess.release(task.id, byHand.claim_token, 'not running it'), 'BT007');
    const [renewed] = await daemonProcess.checkClaims([{ taskId: task.id, claimToken: byHand.claim_token! }], { renew: true });
    expect(renewed).toMatchObject({ current: false });
    const done = await bot.client.complete(task.id, byHand.claim_token);
    expect(done.status).toBe('completed');
  });

  it('says how long each claim holds, on the database\'s clock: two wake-ups where longer than the lease, none while a question waits', async () => {
    const boss = await newAgent('boss');
    const bot = await newAgent('holds');
    await bot.client.updateProfile({ pollIntervalSeconds: 30 });
    await bot.client.heartbeat();
    const task = await boss.client.handoff({ to: bot.id, title: 'held for two wake-ups', leaseSeconds: 5 });
    const claimed = await bot.client.claim(task.id, { start: true });
    const claim = [{ taskId: task.id, claimToken: claimed.claim_token! }];
    const [running] = await bot.client.checkClaims(claim, { renew: true });
    // greatest(the 5 s lease, two 30 s wake-ups) from the beat the renewal recorded.
    expect(running).toMatchObject({ current: true, status: 'in_progress' });
    expect(running!.hold_seconds).toBeGreaterThan(50);
    expect(running!.hold_seconds).toBeLessThanOrEqual(60);
    await bot.client.ask(task.id, 'which one?');
    const [asking] = await bot.client.checkClaims(claim);
    expect(asking).toMatchObject({ current: true, status: 'input_required', hold_seconds: null });
    const [stranger] = await boss.client.checkClaims(claim);
    expect(stranger).toMatchObject({ current: false, hold_seconds: null });
  });

  it('lets a superseded process\'s claim lapse at its lease while another process of the agent is heard', async () => {
    const boss = await newAgent('boss');
    const bot = await newAgent('orphan');
    const current = await process_(bot);
    const task = await boss.client.handoff({ to: bot.id, title: 'claimed by a process since superseded' });
    const [claimed] = await current.claimNext({ start: true, leaseSeconds: 5 });
    // As if the claim had been made by a process that a later one superseded just after (a claim and a
    // restart racing): the claim names another process than the agent's current one.
    await db.query('update public.task_handoffs set claim_incarnation = gen_random_uuid() where id = $1', [claimed!.id]);
    // The current process keeps beating and sweeping; the orphaned claim still goes back once its lease ends.
    const requeued = await eventually(async () => {
      await current.heartbeat(undefined, { incarnation: current.incarnation });
      await current.sweep();
      const t = await boss.client.getTask(task.id);
      return t.claimed_by !== bot.id || t.claim_token !== claimed!.claim_token ? t : undefined;
    }, 30_000, 'the orphaned claim to lapse');
    expect(requeued).toMatchObject({ status: 'pending', claimed_by: null });
    expect(requeued.status_reason).toMatch(/the process that claimed it was superseded at .*, and its lease \(00:00:05\) ended; re-queued/);
  });
});

describe('a process that a later one superseded', () => {
  it('stops at once while listening (push), without waiting for a heartbeat to be refused', async () => {
    const agent = await newAgent('twin');
    // A slow heartbeat: only the push can tell it in time.
    const older = await daemon(agent, { executors: {}, heartbeat: '0 0 * * * *' });
    await eventually(async () => older.lines.some((l) => l.msg === 'push is up: listening for work'), 20_000, 'push to be up');
    let stoppedOnItsOwn = false;
    void older.instance.stopped.then(() => { stoppedOnItsOwn = true; });
    const newer = await daemon(agent, { executors: {} });
    await eventually(async () => stoppedOnItsOwn, 20_000, 'the older process to stop on its own');
    expect(older.lines.some((l) => l.msg === 'a later process took over this agent; stopping (run one daemon per agent)')).toBe(true);
    expect(newer.lines.some((l) => l.msg === 'agent stopped')).toBe(false);
    expect((await agent.client.agent(agent.id)).is_active).toBe(true);
  });
});
