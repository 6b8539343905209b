/**
 * Weighs a change to the database's SQL or settings against what is there, on one running stack. The
 * variants take turns, each applied just before its round of single hand-offs (one sender, 32 in
 * flight), so that the machine's drift (10 % within minutes on a shared machine) falls on all of them
 * alike. Prints every round, then the medians: hand-offs/s, and CPU ms per call of Postgres, PostgREST,
 * the stack's own process (the gateway and Realtime) and this client.
 *
 *   node dist/cli/index.js stack serve --dir /var/tmp/ab --api-port 54911 --db-port 54912 &
 *   echo "alter system reset wal_sync_method" > as-is.sql
 *   echo "alter system set wal_sync_method = open_datasync" > open-datasync.sql
 *   npm run bench:variants -- /var/tmp/ab as-is.sql open-datasync.sql
 *
 * Each variant is a file of SQL, run whole as the cluster's superuser; then the configuration is reloaded.
 * The first should put back what the others change. ROUNDS (default 8) and CALLS (3,000 a round) size
 * the run; the stack's quotas are raised for it. Linux only: CPU is read from /proc.
 */
import fs from 'node:fs';
import pg from 'pg';
import { createAdminClient, createBatonClient, parseSigningKey } from '../src/index.js';
import { readRuntime, readSecrets, stackEnv, superuserOf } from '../src/stack/state.js';
import { inParallel } from './peers.js';
import { cpuSecondsWithChildren, processCpuSeconds } from './postgres-cpu.js';
import { median } from './stats.js';

const [dir, ...files] = process.argv.slice(2);
const variants = files.map((file) => fs.readFileSync(file, 'utf8'));
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const CALLS = Number(process.env.CALLS ?? 3000);
const IN_FLIGHT = 32;
const runtime = dir ? readRuntime(dir) : undefined;
const secrets = dir ? readSecrets(dir) : undefined;
if (!runtime?.postgresPid || !runtime.postgrestPid || !secrets || variants.length < 2) {
  process.stderr.write('usage: npm run bench:variants -- <dir of a running stack> <variant.sql> <variant.sql> [...]\n');
  process.exit(2);
}
const env = stackEnv(secrets, runtime.apiPort, runtime.dbPort);
// The cluster's superuser: a variant may change settings or functions only it may.
const ownerUrl = superuserOf(secrets, runtime.dbPort).url;

async function apply(sql: string): Promise<void> {
  const db = new pg.Client({ connectionString: ownerUrl });
  await db.connect();
  try {
    await db.query(sql);
    await db.query('select pg_reload_conf()');
  } finally {
    await db.end();
  }
}

const cpu = () => [cpuSecondsWithChildren(runtime.postgresPid!), processCpuSeconds(runtime.postgrestPid!), processCpuSeconds(runtime.pid)];

await apply('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
const tag = Math.random().toString(36).slice(2, 8);
const sink = `variants-sink-${tag}`;
await admin.createAgent({ id: sink });
const { token } = await admin.createAgent({ id: `variants-sender-${tag}` });
const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token });
const handoffs = (calls: number) => inParallel(calls, IN_FLIGHT, (i) => sender.handoff({ to: sink, title: `variant ${i}`, payload: { n: i } }));
await handoffs(2000);

/** Per round: calls/s, then CPU ms per call of Postgres, PostgREST, the stack's process, this client. */
const rounds: number[][][] = variants.map(() => []);
const show = (values: number[]) => values.map((v, i) => (i ? v.toFixed(3) : v.toFixed(0))).join('\t');
process.stdout.write('variant\tcalls/s\tpostgres\tpostgrest\tgateway\tclient\n');
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [index, sql] of variants.entries()) {
    await apply(sql);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = cpu();
    const own = process.cpuUsage();
    const started = performance.now();
    await handoffs(CALLS);
    const seconds = (performance.now() - started) / 1000;
    const mine = process.cpuUsage(own);
    const after = cpu();
    const row = [CALLS / seconds, ...after.map((v, i) => ((v - before[i]!) * 1000) / CALLS), (mine.user + mine.system) / 1000 / CALLS];
    rounds[index]!.push(row);
    process.stdout.write(`${index}\t${show(row)}\n`);
  }
}
await apply(variants[0]!);
process.stdout.write(`\nmedians of ${ROUNDS} rounds\nvariant\tcalls/s\tpostgres\tpostgrest\tgateway\tclient\tall\n`);
for (const [index, rows] of rounds.entries()) {
  const column = (k: number) => median(rows.map((r) => r[k]!));
  process.stdout.write(`${index}\t${show([0, 1, 2, 3, 4].map(column))}\t${median(rows.map((r) => r[1]! + r[2]! + r[3]! + r[4]!)).toFixed(3)}\n`);
}
process.exit(0);
