/**
 * One line per change of state while the API is away, not one per failed call: the first failure that
 * says "not there now" (isRetryable) is an error, the ones after it are debug lines, and the first
 * call that goes through says how long the outage lasted. Other errors are answers, logged each time.
 */
import type { Logger } from 'pino';
import { isRetryable } from '../errors.js';

export class OutageLog {
  private since: number | undefined;
  private failures = 0;

  constructor(private readonly log: Logger, private readonly recovered: () => void = () => undefined) {}

  /** A call of the daemon's own (`what`: "poll failed", "heartbeat failed", …) failed with `err`. */
  failed(err: unknown, what: string): void {
    if (!isRetryable(err)) return void this.log.error({ err }, what);
    this.failures += 1;
    if (this.since !== undefined) return void this.log.debug({ err }, what);
    this.since = Date.now();
    this.log.error({ err }, `${what}: the API or its database is away; trying again on schedule, and saying so once it answers`);
  }

  /** A call went through: the outage, if there was one, is over. */
  ok(): void {
    if (this.since === undefined) return;
    this.log.info({ outageMs: Date.now() - this.since, failedCalls: this.failures }, 'the API answers again');
    this.since = undefined;
    this.failures = 0;
    this.recovered();
  }
}
