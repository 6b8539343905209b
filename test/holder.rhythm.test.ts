/**
 * Agents driven by hand or by cron keep their claims while they keep waking, and lose them once they
 * miss two wake-ups: the protocol's HEARTBEAT flow, run with the CLI as separate processes, while
 * another agent sweeps.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { cliAs, parsed } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { newAgent, stack } from './helpers.js';

describe('a hand-driven holder', { timeout: 90_000 }, () => {
  it('keeps a task through several sweeps while it wakes on its rhythm, then completes it', async () => {
    const sender = await newAgent('sender');
    const bot = await newAgent('bot');
    const sweeper = await newAgent('sweeper');
    const run = cliAs(bot.token, stack);
    // Claims hold for the lease (5 s here) plus two wake-ups (2 s each) past the bot's last call.
    expect(parsed(await run('status', 'on a 2-second HEARTBEAT', '--every', '2s', '--json'))).toMatchObject({ poll_interval: '00:00:02' });
    const task = await sender.client.handoff({ to: bot.id, title: 'long research', leaseSeconds: 5 });

    // Wake: check the inbox, claim the highest-priority task.
    const inbox = parsed(await run('tasks', '--mine', '--json')) as Array<{ id: string }>;
    expect(inbox.map((t) => t.id)).toContain(task.id);
    expect((await run('claim', task.id)).code).toBe(0);

    // The work spans far more than the claim's 9 s of grace; the bot keeps waking every 2 s.
    const started = Date.now();
    while (Date.now() - started < 14_000) {
      await sleep(2000);
      expect((await run('tasks', '--mine')).code).toBe(0);
      await sweeper.client.sweep();
    }
    expect(await sender.client.getTask(task.id)).toMatchObject({ status: 'in_progress', claimed_by: bot.id, attempts: 1 });
    const done = await run('complete', task.id, '--summary', 'found it');
    expect(done.code, done.stderr).toBe(0);
    expect(await sender.client.getTask(task.id)).toMatchObject({ status: 'completed', result: { summary: 'found it' } });
    expect((await sender.client.events(task.id)).some((e) => e.actor === 'sweep')).toBe(false);
  });

  it('loses the task once it misses two wake-ups past the lease, and its late completion is refused', async () => {
    const sender = await newAgent('sender');
    const bot = await newAgent('bot');
    const sweeper = await newAgent('sweeper');
    const run = cliAs(bot.token, stack);
    await run('status', '--every', '2s');
    const task = await sender.client.handoff({ to: bot.id, title: 'abandoned', leaseSeconds: 5 });
    await run('claim', task.id);
    const silentSince = Date.now();

    // One wake-up missed: still held.
    await sleep(2500);
    await sweeper.client.sweep();
    expect((await sender.client.getTask(task.id)).claimed_by).toBe(bot.id);

    const requeued = await eventually(async () => {
      await sweeper.client.sweep();
      const t = await sender.client.getTask(task.id);
      return t.status === 'pending' && t;
    }, 20_000, 'the sweep to re-queue the silent holder\'s task');
    // 5 s lease + two 2 s wake-ups after its last recorded beat (beats are recorded at most once a second).
    expect(Date.now() - silentSince).toBeGreaterThanOrEqual(7000);
    expect(requeued.status_reason).toMatch(new RegExp(`^holder ${bot.id} unheard since .* \\(lease 00:00:05, wakes every 00:00:02\\); re-queued after attempt 1 of 3$`));
    const late = await run('complete', task.id, '--summary', 'too late');
    expect(late.code).toBe(1);
  });

  it('keeps a claim made with a short lease while it reports status and progress (the issue\'s walk-through)', async () => {
    const sender = await newAgent('sender');
    const bot = await newAgent('bot');
    const sweeper = await newAgent('sweeper');
    const run = cliAs(bot.token, stack);
    const task = await sender.client.handoff({ to: bot.id, title: 'hand-driven' });
    expect((await run('claim', task.id, '--lease', '8')).code).toBe(0);
    for (let i = 1; i <= 5; i += 1) {
      await sleep(3000);
      await run(...(i % 2 ? ['status', `step ${i}`] : ['progress', task.id, `step ${i}`]));
    }
    await sweeper.client.sweep();
    const renewed = parsed(await run('renew', '--json')) as Array<{ task_id: string; current: boolean; lease_expires_at: string }>;
    expect(renewed).toEqual([expect.objectContaining({ task_id: task.id, current: true })]);
    expect(Date.parse(renewed[0]!.lease_expires_at)).toBeGreaterThan(Date.now() + 5000);
    expect((await run('complete', task.id, '--summary', 'kept it')).code).toBe(0);
    expect(await sender.client.getTask(task.id)).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('is told plainly when it renews a task it does not hold', async () => {
    const sender = await newAgent('sender');
    const bot = await newAgent('bot');
    const task = await sender.client.handoff({ to: bot.id, title: 'not claimed' });
    const renewed = await cliAs(bot.token, stack)('renew', task.id);
    expect(renewed.code).toBe(1);
    expect(renewed.stderr).toMatch(/you do not hold \w+ \(pending\)/);
  });
});
