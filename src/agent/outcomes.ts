/**
 * Outcomes that finish within a few milliseconds of each other travel in one request (report_outcomes),
 * which leaves at the end of the event loop's turn when no other task is still working; each still
 * gets its own answer, as if it had been sent alone. When the daemon has room for more
 * work, the same request claims it (report_and_claim): one round trip instead of two.
 */
import type { BatonClient, Outcome } from '../client/agent.js';
import { BatonError, toBatonError } from '../errors.js';
import type { Task, TaskStatus } from '../schemas.js';

interface Waiting {
  outcome: Outcome;
  resolve(status: TaskStatus): void;
  reject(err: BatonError | Error): void;
}

/** How the daemon claims along with a report, and whether more outcomes may come soon. */
export interface ClaimAlong {
  /** Whether a task is still working and may report soon; when none is, a batch does not wait out the window. */
  moreComing(): boolean;
  /** How many tasks to claim with a report of `reporting` outcomes; 0 reports only. */
  want(reporting: number): number;
  /** The tasks claimed (started), before the outcomes' answers are given. */
  claimed(tasks: Task[], wanted: number): void;
  /** The request failed: whatever it claimed may be held without the daemon knowing. */
  lost(err: unknown): void;
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
    const wanted = this.along?.want(batch.length) ?? 0;
    const sent = wanted > 0
      ? this.client.reportAndClaim(outcomes, { claim: wanted }).then(({ outcomes: answers, claimed }) => {
        this.along!.claimed(claimed, wanted);
        return answers;
      }, (err: unknown) => {
        this.along!.lost(err);
        throw err;
      })
      : this.client.reportOutcomes(outcomes);
    sent.then((answers) => {
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
