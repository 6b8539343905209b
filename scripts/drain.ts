/**
 * Waiting for a throughput run to drain, without weighing on what it measures. Counting the open jobs
 * every 50 ms cost Postgres about 0.05 ms of CPU per task in Baton's runs (a count over 5,000 open
 * tasks takes 4.6 ms), charged to the system under test. The workers count what they start
 * (`started`); the database is asked once a second until every job has started (in case one never
 * does), then every 50 ms for the few still being reported.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves when `open()` says no job is left; `open()` runs rarely until `jobs` have started. */
export async function drained(counter: { readonly started: number }, jobs: number, open: () => Promise<boolean>): Promise<void> {
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
