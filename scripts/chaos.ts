/**
 * The chaos run: three daemons as their own processes, always busy (a backlog of 1-3 s tasks with a 5 s lease);
 * again and again one is killed with SIGKILL and started again a second later under the same agent, as
 * systemd or Docker's restart policy does. It reports how long each killed claim took to leave its dead
 * holder (the goal: within the lease + 5 s), how soon each restarted daemon claimed again, and that
 * every task completed exactly once.
 *
 *   npm run bench:chaos
 *   CHAOS_KILLS=8 CHAOS_TASKS=200 npm run bench:chaos
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createBatonClient } from '../src/index.js';
import { fleet, fleetStack, type FleetDaemon } from './fleet.js';
import { median } from './stats.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 8);
const TASKS = Number(process.env.CHAOS_TASKS ?? 200);
const LEASE_SECONDS = 5;
const say = (text: string) => process.stdout.write(`${text}\n`);

const { env, work, db, admin, close } = await fleetStack('chaos');
const chaos = fleet({ env, work, capability: 'chaos', workMs: [1000, 3000], maxConcurrent: 3 });

/** Milliseconds until every claim `held` had when its holder was killed has left it. */
async function handedBackAfter(held: Array<{ id: string; claim_token: string }>, killedAt: number): Promise<number[]> {
  const left = new Map<string, number>();
  while (left.size < held.length && Date.now() - killedAt < 120_000) {
    const { rows } = await db.query<{ id: string; claim_token: string | null; status: string }>(
      'select id, claim_token, status from task_handoffs where id = any($1)', [held.map((h) => h.id)]);
    for (const row of rows) {
      const before = held.find((h) => h.id === row.id)!;
      if (!left.has(row.id) && row.claim_token !== before.claim_token) left.set(row.id, Date.now() - killedAt);
    }
    await sleep(50);
  }
  return held.map((h) => left.get(h.id) ?? Infinity);
}

try {
  const { token: senderToken } = await admin.createAgent({ id: 'chaos-sender' });
  const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: senderToken });
  const daemons: FleetDaemon[] = [];
  for (let i = 0; i < 3; i += 1) {
    const { token } = await admin.createAgent({ id: `chaos-${i}`, capabilities: ['chaos'] });
    daemons.push(chaos.start(`chaos-${i}`, token));
  }

  // A steady stream: ten tasks a second until all are handed off.
  const ids: string[] = [];
  const stream = (async () => {
    while (ids.length < TASKS) {
      const batch = await sender.handoffMany(Array.from({ length: Math.min(10, TASKS - ids.length) }, (_, i) => ({
        title: `chaos ${ids.length + i}`, requiredCapabilities: ['chaos'], leaseSeconds: LEASE_SECONDS,
      })));
      ids.push(...batch.map((b) => b.task_id!));
      await sleep(1000);
    }
  })();

  const handBacks: number[] = [];
  const reclaims: number[] = [];
  await sleep(3000);
  for (let k = 0; k < KILLS; k += 1) {
    const victim = daemons[k % daemons.length]!;
    const { rows: held } = await db.query<{ id: string; claim_token: string }>(
      "select id, claim_token from task_handoffs where claimed_by = $1 and status in ('claimed', 'in_progress')", [victim.id]);
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    const waited = handedBackAfter(held, killedAt);
    await sleep(1000);
    const restartedAt = new Date();
    chaos.restart(victim);
    const [times] = await Promise.all([waited, sleep(2000)]);
    handBacks.push(...times);
    const { rows: [first] } = await db.query<{ ms: number | null }>(
      `select extract(epoch from min(e.at) - $2::timestamptz) * 1000 as ms from task_events e
       where e.actor = $1 and e.to_status = 'in_progress' and e.at > $2`, [victim.id, restartedAt]);
    reclaims.push(first?.ms ?? Infinity);
    say(`kill ${k + 1}: ${victim.id} held ${held.length}; handed back after ${times.map((t) => `${(t / 1000).toFixed(1)} s`).join(', ') || '-'}; claimed again ${first?.ms == null ? 'not yet' : `${(first.ms / 1000).toFixed(1)} s after its restart`}`);
  }
  await stream;

  const deadline = Date.now() + 180_000;
  let open = Infinity;
  while (open > 0 && Date.now() < deadline) {
    open = (await db.query("select count(*)::int as n from task_handoffs where from_agent = 'chaos-sender' and status <> 'completed'")).rows[0].n;
    if (open > 0) await sleep(500);
  }
  const { rows: completions } = await db.query<{ n: number }>(
    `select count(*)::int as n from task_events e join task_handoffs t on t.id = e.task_id
     where t.from_agent = 'chaos-sender' and e.to_status = 'completed' group by e.task_id`);
  const runs = chaos.runs();
  say('');
  say(`kills: ${KILLS}, claims killed: ${handBacks.length}; handed back after: median ${(median(handBacks) / 1000).toFixed(1)} s, max ${(Math.max(...handBacks) / 1000).toFixed(1)} s (goal: within the lease + 5 s = ${LEASE_SECONDS + 5} s)`);
  say(`restarted daemons claimed again: median ${(median(reclaims) / 1000).toFixed(1)} s, max ${(Math.max(...reclaims) / 1000).toFixed(1)} s after their restart`);
  say(`tasks: ${ids.length} handed off, ${open} not completed; completions per task: ${completions.every((c) => c.n === 1) ? 'one each' : 'NOT one each'} (${completions.length} tasks); ran more than once (killed mid-run): ${[...runs.values()].filter((n) => n > 1).length}`);
  say(`errors logged: ${daemons.reduce((n, d) => n + d.errors.length, 0)}${daemons.some((d) => d.errors.length) ? `: ${daemons.flatMap((d) => d.errors).slice(0, 3).join(' | ')}` : ''}`);
  if (open > 0 || !completions.every((c) => c.n === 1) || Math.max(...handBacks) > (LEASE_SECONDS + 5) * 1000) process.exitCode = 1;
} finally {
  await chaos.stop();
  await close();
}
