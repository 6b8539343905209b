/**
 * The gateway's turns at PostgREST: at most so many at once, first come first served, and a slow holder
 * that stops counting so that it never holds up the others for long. The first tests use vitest's fake
 * timers: they say what happens at each moment, never how long anything took.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Turns } from '../src/stack/turns.js';

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
