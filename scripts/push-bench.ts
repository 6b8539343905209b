/**
 * Push against polling on the embedded stack:
 * - hand-off → start over 100 hand-offs, with a daemon that listens (its poll a 60 s safety net) and
 *   with one that polls every second;
 * - the idle cost of 100 listening agents against 100 agents polling every second: HTTP requests/s
 *   and Postgres CPU.
 *
 *   npm run bench:push
 *   BENCH_AGENTS=20 BENCH_IDLE_SECONDS=20 npm run bench:push
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createAdminClient, createAgent, createBatonClient, parseSigningKey, startStack, type BatonAgent } from '../src/index.js';
import { isRetryable } from '../src/errors.js';
import { freePort } from '../src/stack/ports.js';
import { readRuntime } from '../src/stack/state.js';
import { cpuSecondsWithChildren } from './postgres-cpu.js';
import { logRequests } from './requests.js';
import { percentile } from './stats.js';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 120);
const HANDOFFS = Number(process.env.BENCH_HANDOFFS ?? 100);
const say = (text: string) => process.stdout.write(`${text}\n`);

const requests = logRequests();

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-push-bench-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
// This stack's Postgres only: another on the machine (a test suite beside the bench) does not count.
const postmaster = readRuntime(dir)!.postgresPid!;
const postgresCpu = () => cpuSecondsWithChildren(postmaster);
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
const { env } = stack;
const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'key') });
const keys = { url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY };
const daemons: BatonAgent[] = [];
try {
  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  const { token: senderToken } = await admin.createAgent({ id: 'sender' });
  const sender = createBatonClient({ ...keys, token: senderToken });

  const latency = async (id: string, push: boolean) => {
    const { token } = await admin.createAgent({ id, maxConcurrent: 10 });
    const daemon = createAgent({ ...keys, token, push, poll: push ? '*/5 * * * * *' : '* * * * * *', executors: { '*': () => undefined } });
    daemons.push(daemon);
    await daemon.start();
    await sleep(2000);
    for (let i = 0; i < HANDOFFS; i += 1) {
      await sender.handoff({ to: id, title: `latency ${i}` });
      await sleep(50 + Math.random() * 100);
    }
    await sleep(push ? 2000 : 3000);
    await daemon.stop({ graceSeconds: 0 });
    const { rows } = await db.query('select extract(epoch from started_at - created_at) * 1000 as ms from task_handoffs where to_agent = $1 and started_at is not null', [id]);
    return rows.map((r) => Number(r.ms));
  };
  const pushed = await latency('listener', true);
  const polled = await latency('poller', false);

  let startsAgain = 0;
  const idle = async (prefix: string, push: boolean, seconds: number) => {
    const make = (token: string) => createAgent({ ...keys, token, push, poll: push ? '*/5 * * * * *' : '* * * * * *', capabilities: ['idle'], executors: { '*': () => undefined } });
    const tokens: string[] = [];
    for (let i = 0; i < AGENTS; i += 1) tokens.push((await admin.createAgent({ id: `${prefix}-${i}` })).token);
    // A daemon whose first requests found the API too busy to answer in time stops and, as a command,
    // exits 75 for its service manager to start it again; here the benchmark is that manager (a hundred
    // starting at once beside other work can meet it).
    const started = async (token: string): Promise<BatonAgent> => {
      const daemon = make(token);
      daemons.push(daemon);
      try {
        await daemon.start();
        return daemon;
      } catch (err) {
        if (!isRetryable(err)) throw err;
        startsAgain += 1;
        await sleep(1000);
        return started(token);
      }
    };
    const group = await Promise.all(tokens.map(started));
    await sleep(10_000); // joins, first beats and sweeps settle
    const before = { requests: requests.count, cpu: postgresCpu() };
    await sleep(seconds * 1000);
    const used = { requests: requests.count - before.requests, cpu: postgresCpu() - before.cpu };
    await Promise.all(group.map((d) => d.stop({ graceSeconds: 0 })));
    return { requestsPerSecond: used.requests / seconds, cpuShare: used.cpu / seconds };
  };
  const listening = await idle('quiet', true, IDLE_SECONDS);
  const polling = await idle('busy', false, Math.min(IDLE_SECONDS, 30));

  say('');
  say(`| | push (poll 60 s as a safety net) | polling every 1 s |`);
  say('| --- | --- | --- |');
  say(`| hand-off → start p50 / p95 (${HANDOFFS} hand-offs) | ${percentile(pushed, 0.5).toFixed(0)} / ${percentile(pushed, 0.95).toFixed(0)} ms | ${percentile(polled, 0.5).toFixed(0)} / ${percentile(polled, 0.95).toFixed(0)} ms |`);
  say(`| ${AGENTS} idle agents: HTTP requests/s in all | ${listening.requestsPerSecond.toFixed(1)} | ${polling.requestsPerSecond.toFixed(1)} |`);
  say(`| ${AGENTS} idle agents: Postgres CPU (cores) | ${listening.cpuShare.toFixed(3)} | ${polling.cpuShare.toFixed(3)} |`);
  if (startsAgain) say(`\n${startsAgain} daemon start(s) found the API too busy and were started again.`);
} finally {
  await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 }).catch(() => undefined)));
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
