/**
 * The "pending" box (the CLI's `tasks --pending`, MCP's "claimable", the protocol's `tasks --pending`)
 * lists what a claim would take now, as the database decides it: addressed to the agent or broadcast to
 * its capabilities, due (not scheduled for later, not backing off, not waiting on another task), not
 * declined by it. Then the agent claims: it gets exactly what the box listed.
 * A stack of its own: broadcasts anyone may take must not be another file's.
 */
import { describe, expect, it } from 'vitest';
import { cliAs } from './cli.js';
import { ownStack } from './own-stack.js';

const own = ownStack('claimable');

describe('the pending box', () => {
  it('lists what a claim takes now, and nothing the claim would pass over', async () => {
    const [sender, me, other] = await Promise.all([own.newAgent('box-sender'), own.newAgent('box-me', { capabilities: ['review'], maxConcurrent: 50 }), own.newAgent('box-other')]);
    const s = sender.client;
    const hand = (title: string, extra: Record<string, unknown> = {}) => s.handoff({ to: me.id, title, ...extra });
    // Declined by me first: a broadcast goes back to pending, never offered to me again.
    const declined = await s.broadcast({ title: 'declined by me', requiredCapabilities: ['review'] });
    const [taken] = await me.client.claimNext({ capabilities: ['review'] });
    expect(taken?.id).toBe(declined.id);
    await me.client.decline(taken!.id, taken!.claim_token!, 'not mine');
    const first = await s.handoff({ to: other.id, title: 'blocker' });
    const claimable = [
      await hand('addressed to me'),
      await s.broadcast({ title: 'for reviewers', requiredCapabilities: ['review'] }),
      await s.broadcast({ title: 'for anyone' }),
    ];
    const passedOver = [
      await hand('later', { runAt: new Date(Date.now() + 3_600_000).toISOString() }),
      await hand('waits for the blocker', { dependsOn: [first.id] }),
      await s.broadcast({ title: 'for coders', requiredCapabilities: ['code'] }),
      await s.handoff({ to: other.id, title: 'someone else\'s' }),
      declined,
    ];

    const listed = (await me.client.listTasks({ box: 'pending' })).map((t) => t.title);
    expect(listed.sort()).toEqual(claimable.map((t) => t.title).sort());
    // The CLI's box is the same list.
    const cli = await cliAs(me.token, { SUPABASE_URL: own.env.SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY: own.env.SUPABASE_PUBLISHABLE_KEY, SUPABASE_ANON_KEY: own.env.SUPABASE_ANON_KEY })('tasks', '--pending', '--json');
    expect((JSON.parse(cli.stdout) as Array<{ title: string }>).map((t) => t.title).sort()).toEqual(listed.sort());
    // A claim takes exactly those, and nothing the box left out.
    const claimed = await me.client.claimNext({ limit: 50 });
    expect(claimed.map((t) => t.title).sort()).toEqual(listed.sort());
    expect(await me.client.listTasks({ box: 'pending' })).toEqual([]);
    for (const t of passedOver) expect((await s.getTask(t.id)).claimed_by).not.toBe(me.id);
  });

  it('takes a limit, and says what to do when given a page or a status', async () => {
    const me = await own.newAgent('box-limits');
    await expect(me.client.listTasks({ box: 'pending', offset: 10 })).rejects.toMatchObject({ code: 'BT005', hint: expect.stringContaining('limit') });
    await expect(me.client.listTasks({ box: 'pending', limit: 1001 })).rejects.toMatchObject({ code: 'BT005' });
  });
});
