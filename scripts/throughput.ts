/**
 * Throughput on the embedded stack: bulk hand-offs, then four in-process daemons (maxConcurrent 10,
 * polling every second) draining no-op broadcasts end to end; HTTP requests and Postgres CPU per task;
 * and hand-off → start latency with idle daemons. The same workload for pg-boss and graphile-worker
 * on the same Postgres (scripts/peers.ts), their runs alternating with Baton's, and one table with
 * the ratios.
 * Medians of BENCH_RUNS runs, after one warm-up run each that is not counted.
 *
 *   npm run bench:throughput
 *   BENCH_TASKS=2000 BENCH_RUNS=1 BENCH_PEERS=0 npm run bench:throughput
 *   BENCH_PEERS=0 BENCH_VARIANT=no-set.sql npm run bench:throughput   # weighs a change of SQL
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAdminClient, createAgent, createBatonClient, parseSigningKey, type BatonAgent } from '../src/index.js';
import { drained } from './drain.js';
import { openPeer, peers, type OpenPeer, type PeerResult } from './peers.js';
import { cpuMsPer, cpuSplit, type CpuSplit } from './postgres-cpu.js';
import { startStackProcess } from './stack-process.js';
import { logRequests } from './requests.js';
import { median, percentile } from './stats.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DAEMONS = 4;
const say = (text: string) => process.stdout.write(`${text}\n`);

// Every request Baton's clients make; BENCH_PROFILE=1 also prints their times, by RPC.
const requests = logRequests();

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-throughput-'));
fs.chmodSync(dir, 0o755);
// The stack runs in a process of its own, as beside real agents: its gateway's CPU is counted apart.
const stack = await startStackProcess(dir);
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
// The peers, opened in the run below and closed at its end, whatever happens.
const opened: Array<[keyof typeof peers, OpenPeer | Error]> = [];
try {
  const { env } = stack;
  // An operator raising the quotas for a bulk run, as the README says to.
  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  // BENCH_PROFILE=1: where Postgres spends its time, by SQL function (track_functions).
  // BENCH_VARIANT=<file.sql>: a change to the SQL or settings, run whole as the cluster's superuser
  // before the runs, to weigh it on this workload (npm run bench:variants weighs single hand-offs).
  if (process.env.BENCH_PROFILE || process.env.BENCH_VARIANT) {
    const superuser = new pg.Client({ connectionString: stack.adminUrl });
    await superuser.connect();
    if (process.env.BENCH_PROFILE) await superuser.query("alter system set track_functions = 'all'");
    if (process.env.BENCH_VARIANT) await superuser.query(fs.readFileSync(process.env.BENCH_VARIANT, 'utf8'));
    await superuser.query('select pg_reload_conf()');
    await superuser.end();
  }
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const connect = async (id: string, capabilities: string[] = []) => {
    const { token } = await admin.createAgent({ id, capabilities, maxConcurrent: 10 });
    return { id, token, client: createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token }) };
  };
  const sender = await connect('sender');
  const results: Array<{ handoffsPerSecond: number; tasksPerSecond: number; requestsPerTask: number; cpuMsPerTask: CpuSplit }> = [];

  // The peers, on the same Postgres. Their runs alternate with Baton's, run by run, so that the
  // machine's drift during the bench falls on the three alike and the ratios hold.
  if (process.env.BENCH_PEERS !== '0') {
    for (const name of Object.keys(peers) as Array<keyof typeof peers>) {
      opened.push([name, await openPeer(name, env.DATABASE_URL, stack).catch((err: unknown) => err as Error)]);
    }
  }
  const peerResults = new Map<keyof typeof peers, PeerResult[] | Error>(opened.map(([name, peer]) => [name, peer instanceof Error ? peer : []]));
  const peerTurns = async (run: number) => {
    for (const [name, peer] of opened) {
      const done = peerResults.get(name);
      if (peer instanceof Error || done instanceof Error) continue;
      try {
        const r = await peer.run(`noop_${run}`, TASKS);
        if (run === 0) {
          say(`${name} warm-up: ${r.jobsPerSecond.toFixed(0)} tasks/s end to end (not counted)`);
          continue;
        }
        done!.push(r);
        say(`${name} run ${run}: ${r.jobsPerSecond.toFixed(0)} tasks/s end to end, ${r.insertsPerSecond.toFixed(0)} inserts/s, `
          + `CPU ms/task: Postgres ${r.cpuMsPerJob.postgres.toFixed(2)}, its Node ${r.cpuMsPerJob.node.toFixed(2)}`);
      } catch (err) {
        peerResults.set(name, err as Error);
      }
    }
  };

  // Run 0 warms up and is not counted: PostgREST's new connections compile each PL/pgSQL function and
  // plan its statements once, which a long-running stack has long done.
  for (let run = 0; run <= RUNS; run += 1) {
    const capability = `noop-${run}`;
    const workers = await Promise.all(Array.from({ length: DAEMONS }, (_, i) => connect(`worker-${run}-${i}`, [capability])));
    const counter = { started: 0 };
    const daemons: BatonAgent[] = workers.map((w) => createAgent({
      url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: w.token, capabilities: [capability], maxConcurrent: 10,
      poll: '* * * * * *', executors: { '*': () => { counter.started += 1; } },
    }));
    const cpuBefore = cpuSplit(stack);
    const requestsBefore = requests.count;
    const started = performance.now();
    for (let i = 0; i < TASKS; i += 1000) {
      await sender.client.handoffMany(Array.from({ length: Math.min(1000, TASKS - i) }, (_, j) => ({ title: `noop ${i + j}`, requiredCapabilities: [capability] })));
    }
    const handedOff = performance.now();
    await Promise.all(daemons.map((d) => d.start()));
    await drained(counter, TASKS, async () => (await db.query(
      `select exists (select from task_handoffs where from_agent = 'sender' and status in ('pending', 'claimed', 'in_progress', 'input_required') and $1 = any(required_capabilities)) as open`,
      [capability])).rows[0].open as boolean);
    const emptied = performance.now();
    const cpu = cpuMsPer(cpuBefore, cpuSplit(stack), TASKS);
    const used = requests.count - requestsBefore;
    await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
    const result = {
      handoffsPerSecond: TASKS / ((handedOff - started) / 1000),
      tasksPerSecond: TASKS / ((emptied - started) / 1000),
      requestsPerTask: used / TASKS,
      cpuMsPerTask: cpu,
    };
    if (run === 0) {
      say(`warm-up: ${result.tasksPerSecond.toFixed(0)} tasks/s end to end, Postgres ${cpu.postgres.toFixed(2)} ms CPU per task (not counted)`);
    } else {
      results.push(result);
      say(`run ${run}: ${result.tasksPerSecond.toFixed(0)} tasks/s end to end, ${result.handoffsPerSecond.toFixed(0)} hand-offs/s, `
        + `${result.requestsPerTask.toFixed(2)} requests/task, CPU ms/task: Postgres ${cpu.postgres.toFixed(2)}, PostgREST ${cpu.postgrest.toFixed(2)}, gateway ${cpu.gateway.toFixed(2)}, agents ${cpu.node.toFixed(2)}`);
    }
    await peerTurns(run);
  }

  // Hand-off → start with idle daemons polling every second.
  const capability = 'latency';
  const worker = await connect('latency-worker', [capability]);
  const daemon = createAgent({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: worker.token, capabilities: [capability], poll: '* * * * * *', executors: { '*': () => undefined } });
  await daemon.start();
  for (let i = 0; i < 60; i += 1) {
    await sender.client.broadcast({ title: `latency ${i}`, requiredCapabilities: [capability] });
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
  }
  await new Promise((r) => setTimeout(r, 3000));
  await daemon.stop({ graceSeconds: 0 });
  const { rows } = await db.query(`select extract(epoch from started_at - created_at) * 1000 as ms from task_handoffs where $1 = any(required_capabilities) and started_at is not null`, [capability]);
  const latencies = rows.map((r) => Number(r.ms));

  if (process.env.BENCH_PROFILE) {
    await new Promise((r) => setTimeout(r, 1000));
    const { rows: top } = await db.query(`select funcname, calls, round(total_time::numeric) as total_ms, round(self_time::numeric) as self_ms
      from pg_stat_user_functions order by self_time desc limit 20`);
    console.table(top);
    console.table([...requests.timings].map(([rpc, ms]) => ({ rpc, calls: ms.length, p50: percentile(ms, 0.5).toFixed(1), p95: percentile(ms, 0.95).toFixed(1) })));
  }
  // Each peer's send → start latency with idle workers.
  for (const [name, peer] of opened) {
    if (peer instanceof Error) continue;
    const done = peerResults.get(name);
    try {
      const latencies = await peer.latency();
      if (Array.isArray(done) && done.length > 0) done[0]!.latencies = latencies;
    } catch (err) {
      peerResults.set(name, err as Error);
    }
  }

  type Row = { e2e: number; handoffs: number; requests?: number; cpu: CpuSplit; p50: number; p95: number };
  const rowOf = (xs: Array<{ e2e: number; handoffs: number; requests?: number; cpu: CpuSplit }>, lat: number[]): Row => ({
    e2e: median(xs.map((x) => x.e2e)), handoffs: median(xs.map((x) => x.handoffs)),
    requests: xs[0]!.requests === undefined ? undefined : median(xs.map((x) => x.requests!)),
    cpu: { postgres: median(xs.map((x) => x.cpu.postgres)), postgrest: median(xs.map((x) => x.cpu.postgrest)),
           gateway: median(xs.map((x) => x.cpu.gateway)), node: median(xs.map((x) => x.cpu.node)) },
    p50: percentile(lat, 0.5), p95: percentile(lat, 0.95),
  });
  const columns: Array<[string, Row | Error]> = [
    ['Baton', rowOf(results.map((r) => ({ e2e: r.tasksPerSecond, handoffs: r.handoffsPerSecond, requests: r.requestsPerTask, cpu: r.cpuMsPerTask })), latencies)],
    ...[...peerResults].map(([name, r]): [string, Row | Error] => [name, r instanceof Error ? r
      : r.length === 0 ? new Error('no run finished')
      : rowOf(r.map((x) => ({ e2e: x.jobsPerSecond, handoffs: x.insertsPerSecond, cpu: x.cpuMsPerJob })), r[0]!.latencies)]),
  ];
  const baton = columns[0]![1] as Row;
  const cell = (row: Row | Error, show: (r: Row) => string) => (row instanceof Error ? `failed: ${row.message}` : show(row));
  const ratio = (row: Row | Error, pick: (r: Row) => number) => (row instanceof Error ? '' : ` (Baton ${(pick(baton) / pick(row)).toFixed(2)}×)`);
  const n0 = (x: number) => x.toFixed(0);
  say('');
  say(`${TASKS} no-op tasks, 4 workers × 10, poll 1 s, same embedded Postgres, median of ${RUNS}`);
  say('');
  say(`| | ${columns.map(([name]) => name).join(' | ')} |`);
  say(`| --- |${columns.map(() => ' --- |').join('')}`);
  const line = (label: string, show: (r: Row) => string, pick?: (r: Row) => number) =>
    say(`| ${label} | ${columns.map(([, row], i) => cell(row, show) + (pick && i > 0 ? ratio(row, pick) : '')).join(' | ')} |`);
  line('tasks/s end to end', (r) => n0(r.e2e), (r) => r.e2e);
  line('hand-offs (inserts)/s, 1000 per request', (r) => n0(r.handoffs), (r) => r.handoffs);
  line('HTTP requests per task', (r) => (r.requests === undefined ? 'none (SQL)' : r.requests.toFixed(2)));
  line('Postgres CPU ms per task', (r) => r.cpu.postgres.toFixed(2), (r) => r.cpu.postgres);
  line('PostgREST CPU ms per task', (r) => r.cpu.postgrest.toFixed(2));
  line('gateway CPU ms per task (the stack\'s Node process)', (r) => r.cpu.gateway.toFixed(2));
  line('Node CPU ms per task (client and workers, one process)', (r) => r.cpu.node.toFixed(2), (r) => r.cpu.node);
  line('CPU ms per task, all of the above', (r) => (r.cpu.postgres + r.cpu.postgrest + r.cpu.gateway + r.cpu.node).toFixed(2),
    (r) => r.cpu.postgres + r.cpu.postgrest + r.cpu.gateway + r.cpu.node);
  line('hand-off → start, idle workers, p50 / p95 ms', (r) => `${n0(r.p50)} / ${n0(r.p95)}`);
} finally {
  for (const [, peer] of opened) if (!(peer instanceof Error)) await peer.close().catch(() => undefined);
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
