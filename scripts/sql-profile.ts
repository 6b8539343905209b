/**
 * Postgres' own cost per task, without HTTP: one session hands off tasks 1000 per call, another claims
 * and reports them 10 at a time with report_and_claim, as the daemon does. Prints the CPU milliseconds
 * per task of the Postgres processes; then the same behind a backlog of BENCH_BACKLOG (20,000) pending
 * tasks for a capability the worker lacks, which a claim must not read, first with statistics taken
 * before the backlog came, then with statistics that see it; and with BENCH_ABLATE=1 the same with each trigger of
 * task_handoffs left out in turn (on a throwaway stack), to show what each one costs.
 *
 *   npm run bench:sql
 *   BENCH_TASKS=5000 BENCH_ABLATE=1 npm run bench:sql
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startStack } from '../src/index.js';
import { freePort } from '../src/stack/ports.js';
import { readRuntime } from '../src/stack/state.js';
import { cpuSecondsWithChildren, processCpuSeconds } from './postgres-cpu.js';
import { median } from './stats.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BATCH = 10;
const say = (text: string) => process.stdout.write(`${text}\n`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-sql-profile-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
// This stack's Postgres only: another on the machine (a test suite beside the bench) does not count.
const postmaster = readRuntime(dir)!.postgresPid!;
const postgresCpu = () => cpuSecondsWithChildren(postmaster);
const admin = new pg.Client({ connectionString: stack.env.DATABASE_URL });
const sender = new pg.Client({ connectionString: stack.env.DATABASE_URL });
const worker = new pg.Client({ connectionString: stack.env.DATABASE_URL });

/** Act as an agent, as PostgREST does for a request that carries its token. */
const actAs = (client: pg.Client, agent: string) =>
  client.query(`select set_config('request.jwt.claims', $1, false), set_config('role', 'authenticated', false)`,
    [JSON.stringify({ role: 'authenticated', agent_id: agent })]);

interface Measured { handoff: number; work: number; total: number; background: number }

let backends: number[] = [];
const sessionsCpu = () => backends.reduce((sum, pid) => sum + processCpuSeconds(pid), 0);

let round = 0;

async function once(): Promise<Measured> {
  round += 1;
  const capability = `cap-${round}`;
  // A worker of its own each round, as each bench:throughput run has.
  const workerId = `worker-p-${round}`;
  await admin.query('insert into agents (id, capabilities, max_concurrent) values ($1, $2, 1000)', [workerId, [capability]]);
  await actAs(worker, workerId);
  const cpu0 = postgresCpu();
  const own0 = sessionsCpu();
  for (let i = 0; i < TASKS; i += 1000) {
    const tasks = Array.from({ length: Math.min(1000, TASKS - i) }, (_, j) => ({ title: `noop ${i + j}`, required_capabilities: [capability] }));
    await sender.query('select count(*) from handoff_tasks($1)', [JSON.stringify(tasks)]);
  }
  const cpu1 = postgresCpu();
  let outcomes: Array<{ task_id: string; claim_token: string }> = [];
  for (;;) {
    const { rows } = await worker.query<{ r: { claimed: Array<{ id: string; claim_token: string }> } }>(
      'select report_and_claim($1, $2) as r', [JSON.stringify(outcomes), BATCH]);
    const claimed = rows[0]!.r.claimed;
    if (claimed.length === 0 && outcomes.length === 0) break;
    outcomes = claimed.map((t) => ({ task_id: t.id, claim_token: t.claim_token }));
  }
  // Let autovacuum catch up with what this round left, so that its cost counts here and not in the next.
  await new Promise((r) => setTimeout(r, 3000));
  const cpu2 = postgresCpu();
  const own2 = sessionsCpu();
  const per = (a: number, b: number) => ((b - a) * 1000) / TASKS;
  return { handoff: per(cpu0, cpu1), work: per(cpu1, cpu2), total: per(cpu0, cpu2), background: per(cpu0, cpu2) - per(own0, own2) };
}

async function measure(label: string, runs: number): Promise<Measured> {
  const all: Measured[] = [];
  for (let i = 0; i < runs; i += 1) all.push(await once());
  const pick = (k: keyof Measured) => median(all.map((x) => x[k]));
  const m = { handoff: pick('handoff'), work: pick('work'), total: pick('total'), background: pick('background') };
  say(`| ${label} | ${m.handoff.toFixed(3)} | ${m.work.toFixed(3)} | ${m.total.toFixed(3)} | ${m.background.toFixed(3)} |`);
  return m;
}

try {
  await Promise.all([admin.connect(), sender.connect(), worker.connect()]);
  await admin.query(`update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000`);
  await admin.query(`insert into agents (id) values ('sender-p')`);
  await actAs(sender, 'sender-p');
  backends = await Promise.all([sender, worker].map(async (c) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid));
  say(`Postgres CPU ms per task, ${TASKS} no-op tasks: hand-off 1000 per call; claim and report ${BATCH} per call; median of ${RUNS}`);
  say('');
  say('| | hand-off | claim + complete | total | of which background (vacuum, WAL, stats) |');
  say('| --- | --- | --- | --- | --- |');
  await measure('all triggers', RUNS);
  const backlog = Number(process.env.BENCH_BACKLOG ?? 20_000);
  // Statistics taken before the backlog came, as on a table whose history dwarfs its queue (autovacuum
  // analyzes a table again only after a tenth of it changed): they say no task is open.
  // (Vacuum goes on as usual; only the analyzing waits.)
  await admin.query('analyze task_handoffs');
  await admin.query('alter table task_handoffs set (autovacuum_analyze_threshold = 2000000000)');
  for (let i = 0; i < backlog; i += 1000) {
    const tasks = Array.from({ length: Math.min(1000, backlog - i) }, (_, j) => ({ title: `other ${i + j}`, required_capabilities: ['someone-else'] }));
    await sender.query('select count(*) from handoff_tasks($1)', [JSON.stringify(tasks)]);
  }
  await measure(`behind ${backlog} tasks for another capability, statistics taken before them`, RUNS);
  await admin.query('alter table task_handoffs reset (autovacuum_analyze_threshold)');
  await admin.query('analyze task_handoffs');
  await measure(`behind ${backlog} tasks for another capability, statistics that see them`, RUNS);
  if (process.env.BENCH_ABLATE) {
    const { rows } = await admin.query<{ tgname: string }>(
      `select tgname from pg_trigger where tgrelid = 'task_handoffs'::regclass and not tgisinternal order by tgname`);
    for (const { tgname } of rows) {
      await admin.query(`alter table task_handoffs disable trigger ${tgname}`);
      await measure(`without ${tgname}`, RUNS);
      await admin.query(`alter table task_handoffs enable trigger ${tgname}`);
    }
    await admin.query('alter table task_handoffs disable trigger user');
    await measure('without any trigger', RUNS);
    await admin.query('alter table task_handoffs enable trigger user');
  }
} finally {
  await Promise.allSettled([admin.end(), sender.end(), worker.end()]);
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
