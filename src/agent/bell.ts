import { setTimeout as sleep } from 'node:timers/promises';

/** The one wake-up the daemon's loop waits on: anything may ring it, now or at a time, with a reason. */
export type Wake = 'poll' | 'work' | 'slot' | 'results' | 'stop';

export class Bell {
  private rung = new Set<Wake>();
  private waiter: (() => void) | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();

  get pending(): boolean {
    return this.rung.size > 0;
  }

  ring(reason: Wake): void {
    this.rung.add(reason);
    this.waiter?.();
  }

  ringAt(reason: Wake, at: number): void {
    const timer = setTimeout(() => { this.timers.delete(timer); this.ring(reason); }, Math.max(0, at - Date.now()));
    timer.unref();
    this.timers.add(timer);
  }

  /** What rang since the last call. */
  take(): Set<Wake> {
    const rung = this.rung;
    this.rung = new Set();
    return rung;
  }

  wait(): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise((resolve) => { this.waiter = () => { this.waiter = undefined; resolve(); }; });
  }

  /** No timer rings any more. */
  silence(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

/** Waits for `work` to settle, at most `ms`, leaving no timer behind to keep the process alive. */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([work, sleep(ms, undefined, { signal: timer.signal }).catch(() => undefined)]);
  timer.abort();
}
