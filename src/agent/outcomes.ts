/**
 * Outcomes that finish within a few milliseconds of each other travel in one request (report_outcomes);
 * each still gets its own answer, as if it had been sent alone.
 */
import type { BatonClient, Outcome } from '../client/agent.js';
import { BatonError, toBatonError } from '../errors.js';
import type { TaskStatus } from '../schemas.js';

interface Waiting {
  outcome: Outcome;
  resolve(status: TaskStatus): void;
  reject(err: BatonError | Error): void;
}

export class OutcomeBatcher {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly client: BatonClient, private readonly windowMs = 5, private readonly maxBatch = 100) {}

  /** The task's status after the outcome, or the error refusing it (fencing, missing outputs, …). */
  submit(outcome: Outcome): Promise<TaskStatus> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    this.client.reportOutcomes(batch.map((w) => w.outcome)).then((answers) => {
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
