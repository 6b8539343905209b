/**
 * Throughput on the embedded stack: bulk hand-offs, then four in-process daemons (maxConcurrent 10,
 * polling every second) draining no-op broadcasts end to end; HTTP requests and Postgres CPU per task;
 * and hand-off → start latency with idle daemons. Medians of BENCH_RUNS runs.
 *
 *   npm run bench:throughput
 *   BENCH_TASKS=2000 BENCH_RUNS=1 npm run bench:throughput
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAdminClient, createAgent, createBatonClient, startStack, type BatonAgent } from '../src/index.js';
import { freePort } from '../src/stack/ports.js';
import { postgresCpuSeconds } from './postgres-cpu.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DAEMONS = 4;
const say = (text: string) => process.stdout.write(`${text}\n`);
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

// Every request supabase-js makes goes through fetch: count them.
let requests = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = ((...args: Parameters<typeof fetch>) => { requests += 1; return realFetch(...args); }) as typeof fetch;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-throughput-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
try {
  const { env } = stack;
  // An operator raising the quotas for a bulk run, as the README says to.
  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  // BENCH_PROFILE=1: where Postgres spends its time, by SQL function (track_functions).
  if (process.env.BENCH_PROFILE) {
    await db.query("alter system set track_functions = 'all'");
    await db.query('select pg_reload_conf()');
  }
  const admin = createAdminClient({ url: env.SUPABASE_URL, serviceRoleKey: env.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: env.SUPABASE_JWT_SECRET });
  const connect = async (id: string, capabilities: string[] = []) => {
    const { token } = await admin.createAgent({ id, capabilities, maxConcurrent: 10 });
    return { id, token, client: createBatonClient({ url: env.SUPABASE_URL, anonKey: env.SUPABASE_ANON_KEY, token }) };
  };
  const sender = await connect('sender');
  const results: Array<{ handoffsPerSecond: number; tasksPerSecond: number; requestsPerTask: number; cpuMsPerTask: number }> = [];

  for (let run = 0; run < RUNS; run += 1) {
    const capability = `noop-${run}`;
    const workers = await Promise.all(Array.from({ length: DAEMONS }, (_, i) => connect(`worker-${run}-${i}`, [capability])));
    const daemons: BatonAgent[] = workers.map((w) => createAgent({
      url: env.SUPABASE_URL, anonKey: env.SUPABASE_ANON_KEY, token: w.token, capabilities: [capability], maxConcurrent: 10,
      poll: '* * * * * *', executors: { '*': () => undefined },
    }));
    const cpuBefore = postgresCpuSeconds();
    const requestsBefore = requests;
    const started = performance.now();
    for (let i = 0; i < TASKS; i += 1000) {
      await sender.client.handoffMany(Array.from({ length: Math.min(1000, TASKS - i) }, (_, j) => ({ title: `noop ${i + j}`, requiredCapabilities: [capability] })));
    }
    const handedOff = performance.now();
    await Promise.all(daemons.map((d) => d.start()));
    for (;;) {
      const { rows } = await db.query(`select count(*)::int as open from task_handoffs where $1 = any(required_capabilities) and status <> 'completed'`, [capability]);
      if (rows[0].open === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const drained = performance.now();
    const cpu = postgresCpuSeconds() - cpuBefore;
    const used = requests - requestsBefore;
    await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
    const result = {
      handoffsPerSecond: TASKS / ((handedOff - started) / 1000),
      tasksPerSecond: TASKS / ((drained - started) / 1000),
      requestsPerTask: used / TASKS,
      cpuMsPerTask: (cpu * 1000) / TASKS,
    };
    results.push(result);
    say(`run ${run + 1}: ${result.tasksPerSecond.toFixed(0)} tasks/s end to end, ${result.handoffsPerSecond.toFixed(0)} hand-offs/s, `
      + `${result.requestsPerTask.toFixed(2)} requests/task, ${result.cpuMsPerTask.toFixed(2)} ms Postgres CPU/task`);
  }

  // Hand-off → start with idle daemons polling every second.
  const capability = 'latency';
  const worker = await connect('latency-worker', [capability]);
  const daemon = createAgent({ url: env.SUPABASE_URL, anonKey: env.SUPABASE_ANON_KEY, token: worker.token, capabilities: [capability], poll: '* * * * * *', executors: { '*': () => undefined } });
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
  }
  say('');
  say(`| Baton, ${TASKS} no-op tasks, ${DAEMONS} daemons × 10, poll 1 s (median of ${RUNS}) | |`);
  say('| --- | --- |');
  say(`| end to end | ${median(results.map((r) => r.tasksPerSecond)).toFixed(0)} tasks/s |`);
  say(`| bulk hand-off (handoffMany, 1000 per request) | ${median(results.map((r) => r.handoffsPerSecond)).toFixed(0)} tasks/s |`);
  say(`| HTTP requests per task | ${median(results.map((r) => r.requestsPerTask)).toFixed(2)} |`);
  say(`| Postgres CPU per task (hand-off + claim + complete) | ${median(results.map((r) => r.cpuMsPerTask)).toFixed(2)} ms |`);
  say(`| hand-off → start, idle daemon polling every 1 s (${latencies.length} tasks) | p50 ${pct(latencies, 0.5).toFixed(0)} ms, p95 ${pct(latencies, 0.95).toFixed(0)} ms |`);
} finally {
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
