/**
 * Waiting for a throughput run to drain, without weighing on what it measures. Counting the open jobs
 * every 50 ms cost Postgres about 0.05 ms of CPU per task in Baton's runs (a count over 5,000 open
 * tasks takes 4.6 ms), charged to the system under test. The workers count what they start; the
 * database is asked once a second until every job has started (in case one never does), then every
 * 50 ms for the few still being reported.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface StartCounter {
  /** Jobs started so far; pass `count` to the workers as what they run for each job. */
  readonly started: number;
  count(): void;
}

export function startCounter(): StartCounter {
  let started = 0;
  return { get started() { return started; }, count() { started += 1; } };
}

/** Resolves when `open()` says no job is left; `open()` runs rarely until `jobs` have started. */
export async function drained(counter: StartCounter, jobs: number, open: () => Promise<boolean>): Promise<void> {
  let askedAt = performance.now();
  for (;;) {
    const all = counter.started >= jobs;
    if (all || performance.now() - askedAt >= 1000) {
      askedAt = performance.now();
      if (!(await open())) return;
    }
    await sleep(all ? 50 : 10);
  }
}
