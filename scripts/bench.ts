/**
 * Does the claim path stay flat as history grows? Measures claim_next_tasks (and a whole
 * hand-off → claim → complete round trip) on an empty table, then again with a million finished tasks
 * in it. Reports medians and the ratio; the machine is shared, so compare ratios, not absolute times.
 *
 *   npm run bench            # 1,000,000 finished tasks
 *   BENCH_HISTORY=200000 npm run bench
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAdminClient, createBatonClient, openStatuses, parseSigningKey, startStack, type BatonClient } from '../src/index.js';
import { freePort } from '../src/stack/ports.js';
import { median, percentile } from './stats.js';

const HISTORY = Number(process.env.BENCH_HISTORY ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const say = (text: string) => process.stdout.write(`${text}\n`);

async function measure(sender: BatonClient, worker: BatonClient, workerId: string) {
  const claim: number[] = [];
  const roundTrip: number[] = [];
  const inbox: number[] = [];
  const sent: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = performance.now();
    await sender.handoff({ to: workerId, title: `bench ${i}` });
    const before = performance.now();
    const [task] = await worker.claimNext({ start: true });
    claim.push(performance.now() - before);
    await worker.complete(task!.id, task!.claim_token);
    roundTrip.push(performance.now() - start);
    if (i % 10 === 0) {
      const listed = performance.now();
      await worker.listTasks({ box: 'mine', status: [...openStatuses] }); // what `baton tasks` shows
      inbox.push(performance.now() - listed);
      const listedSent = performance.now();
      await sender.listTasks({ box: 'sent' }); // what `baton tasks --sent` shows
      sent.push(performance.now() - listedSent);
    }
  }
  return { claimMedianMs: median(claim), claimP95Ms: percentile(claim, 0.95), roundTripMedianMs: median(roundTrip), inboxMedianMs: median(inbox), sentMedianMs: median(sent) };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
try {
  const { env } = stack;
  // Hundreds of hand-offs a minute from one sender: an operator raises its quotas for such a run.
  const settings = new pg.Client({ connectionString: env.DATABASE_URL });
  await settings.connect();
  await settings.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  await settings.end();
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const client = async (id: string) => createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: (await admin.createAgent({ id, maxConcurrent: 10 })).token });
  const sender = await client('sender');
  const worker = await client('worker');
  await measure(sender, worker, 'worker'); // warm-up
  const empty = await measure(sender, worker, 'worker');
  say(`empty history:        claim median ${empty.claimMedianMs.toFixed(2)} ms (p95 ${empty.claimP95Ms.toFixed(2)}), round trip median ${empty.roundTripMedianMs.toFixed(2)} ms, inbox median ${empty.inboxMedianMs.toFixed(2)} ms`);

  // Seed finished history directly: triggers off (replica role) so that a million rows load in seconds.
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const seeded = performance.now();
  await db.query('set session_replication_role = replica');
  for (let done = 0; done < HISTORY; done += 100_000) {
    await db.query(`
      insert into task_handoffs (id, from_agent, to_agent, title, status, claimed_by, attempts, created_at, completed_at, result, root_task_id)
      select id, 'sender', 'worker', 'finished ' || n, (array['completed','failed','cancelled']::task_status[])[1 + n % 3],
             case when n % 3 = 2 then null else 'worker' end, 1,
             now() - make_interval(secs => n), now() - make_interval(secs => n), '{"status": "success"}', id
      from (select gen_random_uuid() as id, n from generate_series($1::int, $2::int) n) s`, [done + 1, Math.min(done + 100_000, HISTORY)]);
  }
  await db.query('set session_replication_role = origin');
  await db.query('analyze task_handoffs');
  const { rows: [{ n }] } = await db.query(`select count(*)::int as n from task_handoffs`);
  await db.end();
  say(`seeded ${n.toLocaleString('en')} tasks in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

  await measure(sender, worker, 'worker'); // warm-up
  const full = await measure(sender, worker, 'worker');
  say(`${HISTORY.toLocaleString('en')} finished tasks: claim median ${full.claimMedianMs.toFixed(2)} ms (p95 ${full.claimP95Ms.toFixed(2)}), round trip median ${full.roundTripMedianMs.toFixed(2)} ms, inbox median ${full.inboxMedianMs.toFixed(2)} ms`);
  say(`sent listing (baton tasks --sent): median ${empty.sentMedianMs.toFixed(2)} ms empty, ${full.sentMedianMs.toFixed(2)} ms full`);
  say(`ratio (full / empty): claim ${(full.claimMedianMs / empty.claimMedianMs).toFixed(2)}, round trip ${(full.roundTripMedianMs / empty.roundTripMedianMs).toFixed(2)}, inbox ${(full.inboxMedianMs / empty.inboxMedianMs).toFixed(2)}, sent ${(full.sentMedianMs / empty.sentMedianMs).toFixed(2)}`);
  say(JSON.stringify({ history: HISTORY, rounds: ROUNDS, empty, full, claimRatio: full.claimMedianMs / empty.claimMedianMs }));
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
