/**
 * Outcomes that finish within a few milliseconds of each other travel in one request (report_outcomes),
 * which leaves at the end of the event loop's turn when no other task is still working; each still
 * gets its own answer, as if it had been sent alone. When the daemon has room for more
 * work, the same request claims it (report_and_claim): one round trip instead of two.
 */
import type { BatonClient, Outcome } from '../client/agent.js';
import { BatonError, SupersededError, toBatonError } from '../errors.js';
import type { Task, TaskStatus } from '../schemas.js';
import { untraced } from '../telemetry/tracing.js';

interface Waiting {
  outcome: Outcome;
  resolve(status: TaskStatus): void;
  reject(err: BatonError | Error): void;
}

/**
 * What the daemon lets a report claim. The reporter never decides to claim: it asks the daemon's own
 * rule how many tasks to claim along, and hands what the request claimed back to the daemon.
 */
export interface ClaimAlong {
  /** Whether a task is still working and may report soon; when none is, a batch does not wait out the window. */
  moreComing(): boolean;
  /** How many tasks to claim with a report of `reporting` outcomes (their slots free with it); 0 reports only. */
  claimable(reporting: number): number;
  /** The tasks the combined request claimed (started), given before the outcomes' answers; or its failure. */
  claimed(request: Promise<Task[]>, wanted: number): void;
}

export class OutcomeBatcher {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;

  constructor(
    private readonly client: BatonClient,
    private readonly along?: ClaimAlong,
    private readonly windowMs = 5,
    private readonly maxBatch = 100,
  ) {}

  /** The task's status after the outcome, or the error refusing it (fencing, missing outputs, …). */
  submit(outcome: Outcome): Promise<TaskStatus> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.flush();
      // Waiting out the window is worth it only while some task may still report. Otherwise the batch
      // goes as soon as this turn of the event loop is over, once the tasks whose reports were just
      // answered have let go of their slots, so that it can claim them along.
      else if (this.along?.moreComing() === false) this.soon ??= setImmediate(() => this.flush());
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    clearImmediate(this.soon);
    this.timer = undefined;
    this.soon = undefined;
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    const outcomes = batch.map((w) => w.outcome);
    const wanted = this.along?.claimable(batch.length) ?? 0;
    // One request for many tasks belongs to none of their traces: sent untraced, so that a follow-up
    // it makes carries its parent task's context (the database's rule), not whichever task flushed.
    const sent = untraced(() => (wanted > 0
      ? this.client.reportAndClaim(outcomes, { claim: wanted })
      : this.client.reportOutcomes(outcomes).then((answers) => ({ outcomes: answers, claimed: [] as Task[], claimError: null }))));
    // A claim refused because a later process took over the agent is the daemon's to hear.
    if (wanted > 0) {
      this.along!.claimed(sent.then((r) => {
        if (r.claimError instanceof SupersededError) throw r.claimError;
        return r.claimed;
      }), wanted);
    }
    sent.then(({ outcomes: answers }) => {
      batch.forEach((waiting, i) => {
        const answer = answers[i];
        if (answer?.status) waiting.resolve(answer.status);
        else waiting.reject(toBatonError({ code: answer?.code ?? 'BATCH', message: answer?.message ?? 'no answer for this outcome', hint: answer?.hint }));
      });
    }, (err: unknown) => {
      for (const waiting of batch) waiting.reject(err instanceof Error ? err : new Error(String(err)));
    });
  }
}
