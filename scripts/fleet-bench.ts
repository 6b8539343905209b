/**
 * A fleet on one embedded stack at a hosted plan's Realtime quotas (src/stack/quotas.ts): FLEET_DAEMONS
 * daemons of one agent each, in FLEET_HOSTS processes (scripts/fleet-host.ts), each daemon with its own
 * connection as one `baton agent run` per agent has, or with FLEET_SHARED=1 the agents of a process
 * over shared connections, as one `baton agent run` with a config per agent has.
 *
 *   npm run bench:fleet                                   # Free's quotas, 300 daemons in 20 processes
 *   FLEET_SHARED=1 npm run bench:fleet                    # the same, 15 agents a process sharing connections
 *   FLEET_PLAN=pro FLEET_DAEMONS=1000 FLEET_TASKS=10000 FLEET_IDLE_SECONDS=300 FLEET_SHARED=1 npm run bench:fleet
 *
 * 1. Idle for FLEET_IDLE_SECONDS: requests/s, messages/s and connections, against the plan.
 * 2. FLEET_TASKS hand-offs spread over the agents, in batches of 100: every task done exactly once,
 *    hand-off → claim p50 and p95, for the agents on push and those refused it (polling).
 * 3. Every process killed at once and started again at once: joins and refusals in the minute after,
 *    reconnects per daemon, and a task for every agent done once.
 * Throughout, every 5 s: the stack's /metrics (joins/s and messages/s as hosted averages them), the
 * highest of each against the plan's quota.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createBatonClient, isRetryable } from '../src/index.js';
import { parseRealtimePlan } from '../src/stack/quotas.js';
import { fleetStack } from './fleet.js';
import { percentile } from './stats.js';

const PLAN = process.env.FLEET_PLAN ?? 'free';
const DAEMONS = Number(process.env.FLEET_DAEMONS ?? 300);
const HOSTS = Number(process.env.FLEET_HOSTS ?? 20);
const IDLE_SECONDS = Number(process.env.FLEET_IDLE_SECONDS ?? 60);
const TASKS = Number(process.env.FLEET_TASKS ?? 3000);
const say = (text: string) => process.stdout.write(`${text}\n`);
const host = fileURLToPath(new URL('./fleet-host.ts', import.meta.url));

const quotas = parseRealtimePlan(PLAN);
const { env, work, db, admin, close } = await fleetStack('fleet', { realtimePlan: PLAN });
const runsFile = path.join(work, 'runs.log');
const logFile = path.join(work, 'daemons.log');

async function metrics(): Promise<Record<string, number>> {
  const text = await (await fetch(`${env.SUPABASE_URL}/metrics`, { headers: { apikey: env.SUPABASE_SECRET_KEY } })).text();
  return Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
}

/** The highest joins/s and messages/s (hosted's averages) and connections seen, sampled every 5 s. */
const peak = { joinsPerSecond: 0, messagesPerSecond: 0, connections: 0 };
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const m = await metrics().catch(() => undefined);
    if (m) {
      peak.joinsPerSecond = Math.max(peak.joinsPerSecond, m.baton_realtime_joins_per_second ?? 0);
      peak.messagesPerSecond = Math.max(peak.messagesPerSecond, m.baton_realtime_messages_per_second ?? 0);
      peak.connections = Math.max(peak.connections, m.baton_realtime_connections ?? 0);
    }
    await sleep(5000);
  }
})();

const children: ChildProcess[] = [];
function startHosts(tokens: string[]): Promise<void> {
  const per = Math.ceil(tokens.length / HOSTS);
  const started: Array<Promise<void>> = [];
  for (let h = 0; h < HOSTS; h += 1) {
    const mine = tokens.slice(h * per, (h + 1) * per);
    if (!mine.length) continue;
    const child = spawn(process.execPath, ['--import', 'tsx', host], {
      env: { ...process.env, SUPABASE_URL: env.SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, FLEET_TOKENS: JSON.stringify(mine), FLEET_RUNS: runsFile, FLEET_LOG: logFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    started.push(new Promise((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => { if (chunk.toString().includes('started')) resolve(); });
      child.once('exit', (code) => reject(new Error(`a fleet host exited (${code}) before its daemons started`)));
    }));
  }
  return Promise.all(started).then(() => undefined);
}

const logLines = () => fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; agentId?: string; reason?: string; level: number; err?: { message?: string } }) : [];
const runs = () => {
  const counted = new Map<string, number>();
  if (fs.existsSync(runsFile)) for (const id of fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean)) counted.set(id, (counted.get(id) ?? 0) + 1);
  return counted;
};

/**
 * A call the saturated machine may leave unanswered within its deadline, made again: the hand-offs carry
 * idempotency keys, so a batch that went through without its answer is not handed off twice.
 */
async function answered<T>(call: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await call();
    } catch (err) {
      if (!isRetryable(err) || tries >= 10) throw err;
      await sleep(2000);
    }
  }
}

async function drain(ids: string[], what: string): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const { rows } = await db.query<{ n: number }>("select count(*)::int as n from task_handoffs where id = any($1) and status = 'completed'", [ids]);
    if (rows[0]!.n === ids.length) return;
    if (Date.now() > deadline) throw new Error(`${what}: ${ids.length - rows[0]!.n} of ${ids.length} tasks not done after 15 min`);
    await sleep(1000);
  }
}

try {
  say(`fleet: ${DAEMONS} daemons in ${HOSTS} processes at the ${PLAN} plan's quotas (${JSON.stringify(quotas)}), ${process.env.FLEET_SHARED === '1' ? 'the agents of a process sharing connections' : 'each daemon its own connection'}`);
  const { token: senderToken } = await admin.createAgent({ id: 'fleet-sender' });
  const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: senderToken });
  const ids: string[] = [];
  const tokens: string[] = [];
  for (let i = 0; i < DAEMONS; i += 1) {
    const id = `fleet-${i}`;
    tokens.push((await admin.createAgent({ id, maxConcurrent: 4 })).token);
    ids.push(id);
  }
  const t0 = Date.now();
  await startHosts(tokens);
  say(`started in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // 1. Idle.
  await sleep(10_000);
  const idleFrom = await metrics();
  await sleep(IDLE_SECONDS * 1000);
  const idleTo = await metrics();
  const refusedAgents = new Set(logLines().filter((l) => l.msg.startsWith('push refused by Realtime')).map((l) => l.agentId));
  const rate = (name: string) => ((idleTo[name] ?? 0) - (idleFrom[name] ?? 0)) / IDLE_SECONDS;
  say(`idle ${IDLE_SECONDS} s: ${rate('baton_gateway_requests_total').toFixed(1)} requests/s, ${((rate('baton_realtime_messages_sent_total') + rate('baton_realtime_messages_delivered_total'))).toFixed(2)} messages/s, `
    + `${idleTo.baton_realtime_connections} connections of ${quotas.connections}, ${refusedAgents.size} daemons refused push (polling)`);

  // 2. Work.
  const handed: Array<{ id: string; to: string }> = [];
  const w0 = Date.now();
  for (let b = 0; b < TASKS / 100; b += 1) {
    const batch = Array.from({ length: 100 }, (_, i) => ({ to: ids[(b * 100 + i) % ids.length]!, title: `fleet ${b * 100 + i}`, idempotencyKey: `fleet-${b * 100 + i}` }));
    const made = await answered(() => sender.handoffMany(batch));
    made.forEach((m, i) => { if (m.task_id) handed.push({ id: m.task_id, to: batch[i]!.to }); });
  }
  await drain(handed.map((t) => t.id), 'the work');
  const workSeconds = (Date.now() - w0) / 1000;
  const { rows } = await db.query<{ id: string; to_agent: string; ms: number }>(
    "select t.id, t.to_agent, (extract(epoch from (e.at - t.created_at)) * 1000)::float8 as ms from task_handoffs t join task_events e on e.task_id = t.id and e.from_status = 'pending' where t.id = any($1)", [handed.map((t) => t.id)]);
  const pushed = rows.filter((r) => !refusedAgents.has(r.to_agent)).map((r) => r.ms);
  const polled = rows.filter((r) => refusedAgents.has(r.to_agent)).map((r) => r.ms);
  const counted = runs();
  const twice = [...counted.values()].filter((n) => n > 1).length;
  say(`work: ${handed.length} hand-offs done in ${workSeconds.toFixed(1)} s; ${handed.filter((t) => counted.get(t.id) === 1).length} ran exactly once, ${twice} twice or more; `
    + `hand-off → claim p50/p95: pushed ${percentile(pushed, 0.5).toFixed(0)}/${percentile(pushed, 0.95).toFixed(0)} ms (${pushed.length}), `
    + `polling ${polled.length ? `${percentile(polled, 0.5).toFixed(0)}/${percentile(polled, 0.95).toFixed(0)} ms` : '-'} (${polled.length})`);

  // 3. Everything killed and started again at once.
  const before = await metrics();
  const linesBefore = logLines().length;
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await sleep(2000);
  await startHosts(tokens);
  await sleep(60_000);
  const after = await metrics();
  const restartLines = logLines().slice(linesBefore);
  const joins = (after.baton_realtime_joins_total ?? 0) - (before.baton_realtime_joins_total ?? 0);
  const refusedJoins = Object.keys(after).filter((k) => k.startsWith('baton_realtime_joins_refused_total')).reduce((n, k) => n + (after[k]! - (before[k] ?? 0)), 0);
  const refusedConnections = Object.keys(after).filter((k) => k.startsWith('baton_realtime_connections_refused_total')).reduce((n, k) => n + (after[k]! - (before[k] ?? 0)), 0);
  say(`restart, the minute after: ${joins} joins (${(joins / DAEMONS).toFixed(1)} a daemon), ${refusedJoins} joins and ${refusedConnections} connections refused, `
    + `${restartLines.filter((l) => l.msg.startsWith('push refused by Realtime')).length} daemons said push was refused`);
  const last = await answered(() => sender.handoffMany(ids.map((to) => ({ to, title: 'after the restart', idempotencyKey: `fleet-after-${to}` }))));
  await drain(last.map((t) => t.task_id!).filter(Boolean), 'after the restart');
  const again = runs();
  say(`after the restart: ${last.filter((t) => again.get(t.task_id!) === 1).length} of ${ids.length} ran exactly once`);

  say(`peaks (hosted's averages, sampled every 5 s): joins/s ${peak.joinsPerSecond.toFixed(1)} of ${quotas.joinsPerSecond}, messages/s ${peak.messagesPerSecond.toFixed(1)} of ${quotas.messagesPerSecond}, connections ${peak.connections} of ${quotas.connections}`);
  const final = await metrics();
  const errors = logLines().filter((l) => l.level >= 50);
  const byWords = new Map<string, number>();
  // By what was logged and why: "poll failed … away" says little without its error's words.
  for (const e of errors) {
    const said = `${e.msg}${e.err?.message ? ` (${e.err.message.replace(/https?:\/\/[^ :]+:\d+/, 'the API')})` : ''}`;
    byWords.set(said, (byWords.get(said) ?? 0) + 1);
  }
  say(`dropped: ${final['baton_realtime_messages_dropped_total{quota="rate"}'] ?? 0} broadcasts over messages/s; errors logged: ${errors.length}`
    + [...byWords].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([msg, n]) => `\n  ${n} × ${msg}`).join(''));
  const warnings = new Map<string, number>();
  for (const w of logLines().filter((l) => l.level === 40)) warnings.set(w.msg, (warnings.get(w.msg) ?? 0) + 1);
  say(`warnings logged: ${[...warnings.values()].reduce((a, b) => a + b, 0)}${[...warnings].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([msg, n]) => `\n  ${n} × ${msg}`).join('')}`);
} finally {
  sampling = false;
  await sampler;
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(undefined) : c.once('exit', r)))));
  await close();
}
