/**
 * The network-fault run (test/fault-run.ts) on a long schedule: four daemons behind faulty proxies,
 * a seeded schedule of delays, resets, blackholes, dropped and cut answers and half-open connections,
 * a successor started while its agent's process is cut off, a claim made by hand, a process killed
 * while partitioned; then the heal and the check of the whole history. First the same run without a
 * single fault, for the rate to compare with.
 *
 *   npm run bench:faults
 *   FAULT_SECONDS=120 FAULT_SEED=42 FAULT_RATE=12 npm run bench:faults
 */
import { runFaults, type FaultRunReport } from '../test/fault-run.js';
import { fleetStack } from './fleet.js';

const SECONDS = Number(process.env.FAULT_SECONDS ?? 600);
const BASELINE_SECONDS = Number(process.env.FAULT_BASELINE_SECONDS ?? 120);
const SEED = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
// A little more work than four daemons of three slots can do (about 7 tasks/s here): the rate measured is
// their capacity, not the arrivals, and the backlog left at the heal stays small.
const RATE = Number(process.env.FAULT_RATE ?? 8);
const say = (text: string) => process.stdout.write(`${text}\n`);

const summary = (r: FaultRunReport) => `${r.tasks} tasks, ${r.runs} runs, ${r.completed} completed, ${r.failed} failed; `
  + `${r.tasksPerSecond.toFixed(2)} tasks/s; heal to every agent claiming again ${(r.healToClaimsAgainMs / 1000).toFixed(1)} s, `
  + `to the last task final ${(r.healToLastFinalMs / 1000).toFixed(1)} s; `
  + `${r.rerunAfterSuccess} outcomes held past their lease and run again; ${r.processesStarted} processes started`;

const { env, work, db, admin, close } = await fleetStack('faults');
let failed = false;
try {
  say(`fault-free run, ${BASELINE_SECONDS} s at ${RATE} tasks/s`);
  const baseline = await runFaults({ env, db, admin, work, seed: SEED, scheduleSeconds: BASELINE_SECONDS, taskRate: RATE, faults: false, say });
  say(`  ${summary(baseline)}`);
  say(`faulty run, seed ${SEED} (FAULT_SEED=${SEED} replays it), ${SECONDS} s at ${RATE} tasks/s`);
  const faulty = await runFaults({ env, db, admin, work, seed: SEED, scheduleSeconds: SECONDS, taskRate: RATE, say });
  say(`  ${summary(faulty)}`);
  say(`  faults: ${JSON.stringify(faulty.faults)}`);
  say(`  tasks/s under faults against the fault-free run: ${(faulty.tasksPerSecond / baseline.tasksPerSecond).toFixed(2)}`);
  for (const [name, r] of [['fault-free', baseline], ['faulty', faulty]] as const) {
    if (r.errorLines.length) say(`  ${name}: ${r.errorLines.length} error lines logged, the first: ${r.errorLines.slice(0, 3).join(' | ')}`);
    if (r.violations.length) {
      failed = true;
      say(`  ${name}: ${r.violations.length} VIOLATIONS:`);
      for (const v of r.violations.slice(0, 30)) say(`    ${v}`);
    }
  }
  say(failed ? 'FAILED' : 'passed: every task final, none completed twice, no two holders at once, every re-run explained, every daemon claims after the heal');
} finally {
  await close();
}
process.exit(failed ? 1 : 0);
