/**
 * The gateway's turns at PostgREST: at most so many at once, first come first served, and a slow holder
 * that stops counting so that it never holds up the others for long. The first tests use vitest's fake
 * timers: they say what happens at each moment, never how long anything took. The last one holds every
 * turn of the test stack's gateway with requests that wait on a row lock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { gatewayLimits } from '../src/stack/gateway.js';
import { Turns } from '../src/stack/turns.js';
import { eventually } from './daemon-helpers.js';
import { database, newAgent, uniqueId } from './helpers.js';

afterEach(() => { vi.useRealTimers(); });

/** Takes a turn and records, in `order`, when it began. */
function taker(turns: Turns, order: string[], name: string): Promise<() => void> {
  return turns.take().then((end) => {
    order.push(name);
    return end;
  });
}

describe('turns', () => {
  beforeEach(() => { vi.useFakeTimers(); });
  it('lets so many hold at once, and the next in line go when one ends', async () => {
    const turns = new Turns(2, 50);
    const order: string[] = [];
    const a = taker(turns, order, 'a');
    const b = taker(turns, order, 'b');
    void taker(turns, order, 'c');
    void taker(turns, order, 'd');
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(['a', 'b']);
    expect(turns.load).toEqual({ holding: 2, waiting: 2 });
    (await b)();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(['a', 'b', 'c']);
    (await a)();
    (await a)(); // ending twice ends once
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(turns.load).toEqual({ holding: 2, waiting: 0 });
  });

  it('stops counting a holder once it has held its turn for slowMs, and lets the next go', async () => {
    const turns = new Turns(1, 50);
    const order: string[] = [];
    const slow = await taker(turns, order, 'slow');
    void taker(turns, order, 'next');
    await vi.advanceTimersByTimeAsync(49);
    expect(order).toEqual(['slow']);
    await vi.advanceTimersByTimeAsync(1);
    expect(order).toEqual(['slow', 'next']);
    expect(turns.load).toEqual({ holding: 1, waiting: 0 });
    // The slow one ending later frees nothing it no longer holds.
    slow();
    expect(turns.load).toEqual({ holding: 1, waiting: 0 });
  });
});

describe('the gateway\'s turns at PostgREST', () => {
  it('lets other requests through while every turn is held by a request that waits on a lock', async () => {
    vi.useRealTimers();
    // Broadcasts only these agents can see: other files' agents (a watching board's, say) never list them.
    const skill = uniqueId('locked');
    const sender = await newAgent('lock-sender', { capabilities: [skill] });
    const waiters = await Promise.all(Array.from({ length: gatewayLimits.upstreamAtOnce + 2 }, (_, i) => newAgent(`lock-waiter-${i}`, { capabilities: [skill] })));
    const task = await sender.client.broadcast({ title: 'locked', requiredCapabilities: [skill] });
    const db = database();
    const holder = await db.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from task_handoffs where id = $1 for update', [task.id]);
      // More claims than there are turns, each waiting on the row lock inside PostgREST.
      const claims = waiters.map((w) => w.client.claim(task.id).then(() => 'claimed', () => 'refused'));
      await eventually(async () => (await db.query(
        "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%claim_task%'")).rows[0].n >= gatewayLimits.upstreamAtOnce || undefined,
      20_000, 'every turn to be held by a claim waiting on the lock');
      // With every turn held, another agent's request still goes through.
      const through = sender.client.handoff({ to: sender.id, title: 'not held up', allowOffline: true });
      const stuck = new Promise<never>((_, reject) => {
        setTimeout(() => reject(new Error('a request waited behind the requests held on the lock')), 20_000).unref();
      });
      expect((await Promise.race([through, stuck])).title).toBe('not held up');
      await holder.query('commit');
      const outcomes = await Promise.all(claims);
      expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  });
});
