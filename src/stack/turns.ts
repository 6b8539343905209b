/**
 * Turns at a resource that computes: at most `limit` holders at once, the others waiting first come,
 * first served. A holder that has held its turn for `slowMs` stops counting: it is waiting on something
 * (a lock, the disk, a slow reader), not computing, and the next in line goes ahead.
 */
export class Turns {
  private counted = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number, private readonly slowMs: number) {}

  /** Resolves when it is the caller's turn, with the function that ends it (safe to call again). */
  take(): Promise<() => void> {
    return new Promise((resolve) => {
      const begin = () => {
        this.counted += 1;
        let holding = true;
        const end = () => {
          if (!holding) return;
          holding = false;
          clearTimeout(slow);
          this.counted -= 1;
          this.next();
        };
        const slow = setTimeout(end, this.slowMs);
        slow.unref?.();
        resolve(end);
      };
      if (this.counted < this.limit) begin();
      else this.waiting.push(begin);
    });
  }

  /** Holders counted now, and callers waiting. */
  get load(): { holding: number; waiting: number } {
    return { holding: this.counted, waiting: this.waiting.length };
  }

  private next(): void {
    while (this.counted < this.limit && this.waiting.length > 0) this.waiting.shift()!();
  }
}
