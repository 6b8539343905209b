/**
 * One line per change of state while the API is away, not one per failed call: the first failure that
 * says "not there now" (isRetryable) is an error, the ones after it are debug lines, and the first
 * call that goes through says how long the outage lasted. Other errors are answers, logged each time.
 *
 * A call that got no answer within its deadline while the API answered another call of this process
 * moments before met an API that is slow, not away (a busy database, a saturated machine): a warning,
 * at most once every SLOW_SAID_MS with the count since, and no outage, so nothing that follows an
 * outage's end (push listened to again, every wake-up rung) runs for it.
 */
import type { Logger } from 'pino';
import { answeredWithin } from '../client/http.js';
import { isLate, isRetryable } from '../errors.js';

/** A late call is "slow" if the API answered another one within this long before it failed. */
const ANSWERED_MS = 10_000;
/** How often a slow API is said, at most. */
const SLOW_SAID_MS = 10 * 60_000;

export class OutageLog {
  private since: number | undefined;
  private failures = 0;

  private slowSaidAt = -Infinity;
  private slowCalls = 0;

  constructor(private readonly log: Logger, private readonly recovered: () => void = () => undefined) {}

  /**
   * A call of the daemon's own (`what`: "poll failed", "heartbeat failed", …) failed with `err`. Says
   * whether the API was slow rather than away (the caller may wait longer before its next call).
   */
  failed(err: unknown, what: string): 'slow' | undefined {
    if (!isRetryable(err)) return void this.log.error({ err }, what);
    if (this.since === undefined && isLate(err) && answeredWithin(ANSWERED_MS)) {
      this.slowCalls += 1;
      if (Date.now() - this.slowSaidAt < SLOW_SAID_MS) {
        this.log.debug({ err }, what);
      } else {
        this.log.warn({ err, slowCalls: this.slowCalls }, `${what}: the API is slow (no answer in time, though it answers other calls); polling less often while it is, and saying so again in ${SLOW_SAID_MS / 60_000} min at most`);
        this.slowSaidAt = Date.now();
        this.slowCalls = 0;
      }
      return 'slow';
    }
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
