/**
 * Single hand-offs, as the protocol's scripts, curl callers, an MCP host or an A2A caller make them: one
 * request a task. One sender with 32 in flight, then 8 senders with 4 each; hand-offs/s and CPU per
 * call (Postgres, PostgREST, the gateway, the client), with quotas counted (their limits raised, as an
 * operator does for a bulk run). Beside them, pg-boss's and graphile-worker's single enqueue calls on
 * the same Postgres, 32 in flight. Medians of BENCH_RUNS runs, after a warm-up; the turns alternate.
 *
 *   npm run bench:single
 *   BENCH_CALLS=2000 BENCH_RUNS=1 BENCH_PEERS=0 npm run bench:single
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAdminClient, createBatonClient, parseSigningKey, type BatonClient } from '../src/index.js';
import { inParallel, openPeer, peers, type OpenPeer } from './peers.js';
import { cpuMsPer, cpuSplit, type CpuSplit } from './postgres-cpu.js';
import { startStackProcess } from './stack-process.js';
import { median } from './stats.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const IN_FLIGHT = 32;
const say = (text: string) => process.stdout.write(`${text}\n`);

interface Turn { perSecond: number; cpu: CpuSplit }

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-single-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
// An idle connection ended by the stack's shutdown is no failure of the bench.
db.on('error', () => undefined);
const opened: Array<[string, OpenPeer]> = [];
try {
  const { env } = stack;
  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  if (process.env.BENCH_PROFILE) {
    const superuser = new pg.Client({ connectionString: stack.adminUrl });
    await superuser.connect();
    await superuser.query("alter system set track_functions = 'all'");
    await superuser.query('select pg_reload_conf()');
    await superuser.end();
  }
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const connect = async (id: string): Promise<BatonClient> => {
    const { token } = await admin.createAgent({ id });
    return createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token });
  };
  await admin.createAgent({ id: 'sink' });
  const one = await connect('sender');
  const eight = await Promise.all(Array.from({ length: 8 }, (_, i) => connect(`sender-${i}`)));

  /** `calls` single hand-offs spread over `senders`, IN_FLIGHT in flight in all. */
  const turn = async (senders: BatonClient[], calls: number): Promise<Turn> => {
    const before = cpuSplit(stack);
    const started = performance.now();
    await Promise.all(senders.map((sender) => inParallel(calls / senders.length, IN_FLIGHT / senders.length,
      (i) => sender.handoff({ to: 'sink', title: `single ${i}`, payload: { n: i } }))));
    const seconds = (performance.now() - started) / 1000;
    return { perSecond: calls / seconds, cpu: cpuMsPer(before, cpuSplit(stack), calls) };
  };

  if (process.env.BENCH_PEERS !== '0') {
    for (const name of Object.keys(peers) as Array<keyof typeof peers>) opened.push([name, await openPeer(name, env.DATABASE_URL, stack)]);
  }
  // Warm-up: caches, pools and plans, for every system, and the JIT of the Node processes (the gateway
  // and this client): with 320 calls each, the first measured turn still cost them 0.1 ms a call more.
  await turn([one], 2000);
  await turn(eight, 2000);
  for (const [, peer] of opened) await peer.enqueue('warm', 320, IN_FLIGHT);

  const results: Record<string, Turn[]> = { 'Baton, 1 sender × 32': [], 'Baton, 8 senders × 4': [] };
  for (const [name] of opened) results[`${name}, 32 in flight`] = [];
  for (let run = 0; run < RUNS; run += 1) {
    results['Baton, 1 sender × 32']!.push(await turn([one], CALLS));
    results['Baton, 8 senders × 4']!.push(await turn(eight, CALLS));
    for (const [name, peer] of opened) {
      const r = await peer.enqueue(`single-${run}`, CALLS, IN_FLIGHT);
      results[`${name}, 32 in flight`]!.push({ perSecond: r.perSecond, cpu: r.cpuMsPerCall });
    }
  }

  say('');
  say(`${CALLS} single calls a turn, medians of ${RUNS} turns`);
  say('');
  say('| | calls/s | Postgres CPU ms/call | PostgREST | gateway | client | all CPU ms/call |');
  say('| --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, turns] of Object.entries(results)) {
    const m = (f: (t: Turn) => number) => median(turns.map(f));
    const all = m((t) => t.cpu.postgres + t.cpu.postgrest + t.cpu.gateway + t.cpu.node);
    say(`| ${name} | ${m((t) => t.perSecond).toFixed(0)} | ${m((t) => t.cpu.postgres).toFixed(2)} | ${m((t) => t.cpu.postgrest).toFixed(2)} | ${m((t) => t.cpu.gateway).toFixed(2)} | ${m((t) => t.cpu.node).toFixed(2)} | ${all.toFixed(2)} |`);
  }
  if (process.env.BENCH_PROFILE) {
    const { rows } = await db.query(`select schemaname || '.' || funcname as fn, calls, round((self_time / greatest(calls, 1))::numeric, 3) as self_ms,
      round((total_time / greatest(calls, 1))::numeric, 3) as total_ms from pg_stat_user_functions order by self_time desc limit 15`);
    say('');
    say('| function | calls | self ms/call | total ms/call |');
    say('| --- | --- | --- | --- |');
    for (const r of rows) say(`| ${r.fn} | ${r.calls} | ${r.self_ms} | ${r.total_ms} |`);
  }
} finally {
  for (const [, peer] of opened) await peer.close().catch(() => undefined);
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
