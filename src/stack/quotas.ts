/**
 * Hosted Realtime's quotas, for the embedded stack: a plan's limits (Supabase's Realtime limits page)
 * and the rate counters that judge them as `supabase/realtime` does (lib/realtime/rate_counter): a
 * count per tick of five seconds, kept for twelve ticks, its average per second against the limit; once
 * the average reaches the limit the counter is "triggered", and stays so until it falls below again.
 * Past a limit the stack answers as hosted does (realtime.ts): a refused join or connection, with
 * hosted's reasons, and broadcasts dropped while messages per second are over.
 */

export interface RealtimeQuotas {
  /** Concurrent connections that have joined a channel ("concurrent users"). */
  connections: number;
  /** Channel joins per second, averaged over the last minute. */
  joinsPerSecond: number;
  /** Messages per second (each broadcast sent, and each delivered to a channel), averaged over the last minute. */
  messagesPerSecond: number;
  /** Channels one connection may hold. */
  channelsPerConnection: number;
  /** The largest broadcast payload, in bytes; a larger one is dropped. */
  payloadBytes: number;
}

const KB = 1024;
const MB = 1024 * KB;

/** The plans' quotas, from Supabase's Realtime limits page (2026). */
export const realtimePlans = Object.freeze({
  free: { connections: 200, joinsPerSecond: 100, messagesPerSecond: 100, channelsPerConnection: 100, payloadBytes: 256 * KB },
  pro: { connections: 500, joinsPerSecond: 500, messagesPerSecond: 500, channelsPerConnection: 100, payloadBytes: 3 * MB },
  team: { connections: 10_000, joinsPerSecond: 2_500, messagesPerSecond: 2_500, channelsPerConnection: 100, payloadBytes: 3 * MB },
  /**
   * No quotas at all, as a self-hosted Realtime runs unless told otherwise: for a test suite whose
   * files share one stack at a load no project has, not for what is to run on hosted.
   */
  unlimited: { connections: Infinity, joinsPerSecond: Infinity, messagesPerSecond: Infinity, channelsPerConnection: Infinity, payloadBytes: Infinity },
} satisfies Record<string, RealtimeQuotas>);
export type RealtimePlanName = keyof typeof realtimePlans;

/** A newcomer's stack has the Free plan's quotas: what works locally works on a new hosted project. */
export const defaultRealtimePlan: RealtimePlanName = 'free';

const keys: Record<string, keyof RealtimeQuotas> = {
  connections: 'connections', joins: 'joinsPerSecond', messages: 'messagesPerSecond', channels: 'channelsPerConnection', payload: 'payloadBytes',
};

/**
 * A plan as written in BATON_REALTIME_PLAN or `--realtime-plan`: a plan's name (`free`, `pro`, `team`,
 * `unlimited`),
 * or a plan with numbers of its own, e.g. `free,connections=5,messages=3` or `connections=5` (Free's
 * for the rest); `payload` takes k or m (256k, 3m).
 */
export function parseRealtimePlan(text: string | undefined): RealtimeQuotas {
  const parts = (text ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  let quotas: RealtimeQuotas = { ...realtimePlans[defaultRealtimePlan] };
  for (const [i, part] of parts.entries()) {
    if (i === 0 && !part.includes('=')) {
      if (!Object.hasOwn(realtimePlans, part)) throw new Error(`unknown Realtime plan "${part}": give free, pro, team or unlimited, optionally with numbers (free,connections=5)`);
      quotas = { ...realtimePlans[part as RealtimePlanName] };
      continue;
    }
    const [name, value] = part.split('=') as [string, string | undefined];
    const key = keys[name];
    const number = value === undefined ? NaN : Number(value.replace(/[km]$/i, '')) * (/k$/i.test(value) ? KB : /m$/i.test(value) ? MB : 1);
    if (!key || !Number.isInteger(number) || number < 1) {
      throw new Error(`"${part}" is no Realtime quota: give ${Object.keys(keys).join(', ')} as name=number (payload=256k)`);
    }
    quotas[key] = number;
  }
  return quotas;
}

/** Hosted's counter: one count per tick, twelve ticks kept, their average per second. */
export class RateCounter {
  private current = 0;
  private readonly buckets: number[] = [];
  /** The average per second over the ticks kept. */
  average = 0;
  /** Whether the average reached the limit at the last tick, and has not yet fallen below it. */
  triggered = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly limit: number, private readonly tickMs = 5000, private readonly keep = 12) {
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
  }

  add(n = 1): void {
    this.current += n;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    this.buckets.unshift(this.current);
    this.current = 0;
    this.buckets.length = Math.min(this.buckets.length, this.keep);
    this.average = this.buckets.reduce((a, b) => a + b, 0) / this.buckets.length / (this.tickMs / 1000);
    this.triggered = this.average >= this.limit;
  }
}
