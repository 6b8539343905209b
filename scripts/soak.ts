/**
 * A soak: N daemons as their own processes (`baton agent run`, push on) for M minutes under a steady
 * stream of short tasks. Every minute it samples each daemon's resident memory, the Postgres backends
 * and the API's requests/s; at the end it counts errors in the daemons' logs and tasks lost or run
 * twice (each run appends its task id to a file; every task must complete, and run, exactly once).
 *
 *   npm run bench:soak
 *   SOAK_DAEMONS=20 SOAK_MINUTES=10 SOAK_RATE=20 npm run bench:soak
 */
import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBatonClient } from '../src/index.js';
import { fleet, fleetStack, rssMiB, type FleetDaemon } from './fleet.js';
import { median } from './stats.js';

const DAEMONS = Number(process.env.SOAK_DAEMONS ?? 20);
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
/** Tasks handed off per second, in one batch a second. */
const RATE = Number(process.env.SOAK_RATE ?? 20);
const say = (text: string) => process.stdout.write(`${text}\n`);

// Every request that reaches the stack's gateway (it runs in this process), from daemons and sender alike.
let requests = 0;
diagnostics.subscribe('http.server.request.start', () => { requests += 1; });

const { env, work, db, admin, close } = await fleetStack('soak');
const fleetWork = fleet({ env, work, capability: 'soak', workMs: [20, 100], maxConcurrent: 4 });
const rss = new Map<string, number[]>();

try {
  const { token: senderToken } = await admin.createAgent({ id: 'soak-sender' });
  const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: senderToken });
  const daemons: FleetDaemon[] = [];
  for (let i = 0; i < DAEMONS; i += 1) {
    const id = `soak-${i}`;
    const { token } = await admin.createAgent({ id, capabilities: ['soak'] });
    daemons.push(fleetWork.start(id, token));
    rss.set(id, []);
  }

  say(`${DAEMONS} daemons, ${MINUTES} min, ${RATE} tasks/s handed off in one batch a second; a sample a minute`);
  say('');
  say('| minute | tasks done | requests/s | Postgres backends | daemon RSS median / max (MiB) |');
  say('| --- | --- | --- | --- | --- |');
  const handedOff: string[] = [];
  const started = Date.now();
  let nextSample = started + 60_000;
  let requestsAtSample = requests;
  let sampledAt = started;
  const sample = async () => {
    const now = Date.now();
    for (const d of daemons) rss.get(d.id)!.push(d.child.exitCode === null ? rssMiB(d.child.pid!) : 0);
    const latest = daemons.map((d) => rss.get(d.id)!.at(-1)!);
    const { rows: [backends] } = await db.query("select count(*)::int as n from pg_stat_activity where backend_type = 'client backend'");
    const { rows: [done] } = await db.query("select count(*)::int as n from task_handoffs where status = 'completed' and from_agent = 'soak-sender'");
    say(`| ${((now - started) / 60_000).toFixed(1)} | ${done.n} | ${((requests - requestsAtSample) / ((now - sampledAt) / 1000)).toFixed(1)} | ${backends.n} | ${median(latest).toFixed(1)} / ${Math.max(...latest).toFixed(1)} |`);
    requestsAtSample = requests;
    sampledAt = now;
  };
  while (Date.now() - started < MINUTES * 60_000) {
    const batch = await sender.handoffMany(Array.from({ length: RATE }, (_, i) => ({ title: `soak ${handedOff.length + i}`, requiredCapabilities: ['soak'] })));
    for (const made of batch) if (made.task_id) handedOff.push(made.task_id);
    if (Date.now() >= nextSample) {
      await sample();
      nextSample += 60_000;
    }
    await sleep(Math.max(0, 1000 - ((Date.now() - started) % 1000)));
  }
  await sample();

  // Drain: every task handed off must complete.
  const drainDeadline = Date.now() + 120_000;
  let open = Infinity;
  while (open > 0 && Date.now() < drainDeadline) {
    open = (await db.query("select count(*)::int as n from task_handoffs where from_agent = 'soak-sender' and status <> 'completed'")).rows[0].n;
    if (open > 0) await sleep(1000);
  }
  const runs = fleetWork.runs();
  const lost = handedOff.filter((id) => !runs.has(id)).length;
  const doubled = [...runs.values()].filter((n) => n > 1).length;
  const { rows: [twice] } = await db.query("select count(*)::int as n from task_handoffs where from_agent = 'soak-sender' and attempts > 1");

  say('');
  say('| daemon | RSS after 1 min (MiB) | RSS at the end (MiB) | growth | errors | warnings |');
  say('| --- | --- | --- | --- | --- | --- |');
  const growths: number[] = [];
  for (const d of daemons) {
    const first = rss.get(d.id)![0] ?? 0;
    const last = rss.get(d.id)!.at(-1) ?? 0;
    const growth = first ? (last - first) / first : 0;
    growths.push(growth);
    say(`| ${d.id} | ${first.toFixed(1)} | ${last.toFixed(1)} | ${(growth * 100).toFixed(1)} % | ${d.errors.length} | ${d.warnings} |`);
  }
  const errors = daemons.flatMap((d) => d.errors.map((e) => `${d.id}: ${e}`));
  say('');
  say(`handed off ${handedOff.length}; not completed ${open}; lost (never ran) ${lost}; ran twice ${doubled}; more than one attempt ${twice.n}`);
  say(`memory growth after the first minute: median ${(median(growths) * 100).toFixed(1)} %, max ${(Math.max(...growths) * 100).toFixed(1)} % (goal < 20 %)`);
  say(`errors logged: ${errors.length}${errors.length ? `; the first: ${errors.slice(0, 5).join(' | ')}` : ''}`);
  if (open > 0 || lost > 0 || doubled > 0 || errors.length > 0 || Math.max(...growths) >= 0.2) process.exitCode = 1;
} finally {
  await fleetWork.stop();
  await close();
}
