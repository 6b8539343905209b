/**
 * The protocol under a faulty network (test/fault-run.ts): four daemons, each behind a proxy that
 * delays, resets, blackholes, drops answers, cuts them, or leaves connections half-open, on a seeded
 * schedule with a successor started while its agent's process is cut off, a claim made by hand beside
 * a daemon, and a process killed while partitioned; then the network heals and the history is checked.
 * Three seeds in a row; BATON_FAULT_SEEDS=1,2,3 replays given ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFaults } from './fault-run.js';
import { ownStack } from './own-stack.js';

const own = ownStack('faults');
const seeds = process.env.BATON_FAULT_SEEDS?.split(',').map(Number) ?? [0, 1, 2].map((i) => (Date.now() + i * 7919) % 1_000_000);
const scheduleSeconds = Number(process.env.BATON_FAULT_SECONDS ?? 30);
let db: pg.Pool;
let work: string;
beforeAll(() => {
  db = new pg.Pool({ connectionString: own.env.DATABASE_URL, max: 4 });
  db.on('error', () => undefined);
  // BATON_FAULT_KEEP=<folder> keeps the daemons' logs and the runs file there, to read a failure.
  work = process.env.BATON_FAULT_KEEP ?? fs.mkdtempSync(path.join(own.dir, 'faults-'));
});
afterAll(() => db?.end());

describe('a faulty network between the daemons and the API', () => {
  for (const seed of seeds) {
    it(`loses no task, runs none twice at once, and recovers after the heal (seed ${seed})`, async () => {
      const report = await runFaults({ env: own.env, db, admin: own.admin, work, seed, scheduleSeconds, say: (l) => console.log(l) });
      console.log(JSON.stringify({ ...report, errorLines: report.errorLines.slice(0, 20) }, null, 1));
      expect(report.violations, `seed ${seed} (BATON_FAULT_SEEDS=${seed} replays it)`).toEqual([]);
      expect(report.completed).toBeGreaterThan(report.tasks / 2);
    }, (scheduleSeconds + 240) * 1000);
  }
});
