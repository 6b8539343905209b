/**
 * The network-fault run of the whole protocol: daemons as their own processes (`baton agent run`),
 * each behind a FaultProxy, under a seeded schedule of faults, with a supervisor that restarts a
 * process that died (as systemd's Restart=on-failure does); then the network heals, and the whole
 * history is checked. test/faults.test.ts runs a short schedule, `npm run bench:faults` a long one.
 *
 * What it checks (each breach is one line in `violations`):
 * - every task is final; none completed twice; each claim ran at most once;
 * - no write by a holder whose claim had been handed back: a completed task's last run made it;
 * - no two holders ran one task at once (a killed process's run ends when it was killed);
 * - every re-run is explained by a claim that went back (a pending in the task's history between runs);
 * - every executor outcome reached the database, or its task ran again;
 * - every agent's daemon claims again after the heal; a claim made by hand beside a daemon stays the hand's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { AdminClient } from '../src/client/admin.js';
import { createBatonClient, type BatonClient } from '../src/client/agent.js';
import { packageRoot } from '../src/stack/paths.js';
import type { StackEnv } from '../src/stack/state.js';
import { FaultProxy, type FaultMode } from './fault-proxy.js';

export interface FaultRunOptions {
  env: StackEnv;
  db: pg.Pool;
  admin: AdminClient;
  /** A folder for the run's files (config, executor, runs, logs). */
  work: string;
  seed: number;
  /** How long faults are thrown, in seconds. */
  scheduleSeconds: number;
  daemons?: number;
  /** Tasks handed off a second while the schedule runs. */
  taskRate?: number;
  /** false: the same run without a single fault (the baseline). */
  faults?: boolean;
  say?: (line: string) => void;
}

export interface FaultRunReport {
  seed: number;
  tasks: number;
  runs: number;
  completed: number;
  failed: number;
  /** Tasks completed a second, from the first hand-off to the last task final. */
  tasksPerSecond: number;
  /** From the heal to the last task final (with a backlog, how long it took to drain). */
  healToLastFinalMs: number;
  /** From the heal until every agent had claimed and completed a task addressed to it after the heal. */
  healToClaimsAgainMs: number;
  faults: Record<string, number>;
  processesStarted: number;
  /** Runs whose success did not reach the database before their claim ended (cut off past the lease), so the task ran again. */
  rerunAfterSuccess: number;
  violations: string[];
  /** Error lines the daemons logged, for the reader. */
  errorLines: string[];
}

/** A small seeded generator (mulberry32), so that a seed replays a schedule. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const LEASE_SECONDS = 5;
const randomFaults: FaultMode[] = ['delay', 'reset', 'blackhole', 'drop-responses', 'cut', 'half-open'];

interface RunLine { ev: 'start' | 'end'; task: string; token: string; inc: string | null; agent: string; pid: number; at: number; outcome?: string }

interface Proc { agent: string; token: string; proxy: FaultProxy; child: ChildProcess; killedAt?: number; stopping: boolean; exited: Promise<void>; superseded: boolean }

export async function runFaults(options: FaultRunOptions): Promise<FaultRunReport> {
  const { env, db, admin, work, seed, scheduleSeconds, daemons: count = 4, taskRate = 5, faults = true } = options;
  const say = options.say ?? (() => undefined);
  const random = seeded(seed);
  const between = (lo: number, hi: number) => lo + random() * (hi - lo);
  const tag = `f${seed.toString(36)}${Date.now().toString(36).slice(-4)}`;
  const capability = `faults-${tag}`;
  const dir = path.join(work, tag);
  fs.mkdirSync(dir, { recursive: true });
  const runsFile = path.join(dir, 'runs.log');
  const executor = path.join(dir, 'executor.mjs');
  fs.writeFileSync(executor, `import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { RetryableError } from ${JSON.stringify(path.join(packageRoot, 'dist', 'index.js'))};
export default async (task, ctx) => {
  const line = (o) => fs.appendFileSync(${JSON.stringify(runsFile)}, JSON.stringify({ ...o, task: task.id, token: task.claim_token, inc: task.claim_incarnation, agent: ctx.agentId, pid: process.pid, at: Date.now() }) + '\\n');
  line({ ev: 'start', attempt: ctx.attempt });
  try {
    await sleep(task.payload.ms, undefined, { signal: ctx.signal });
  } catch (err) {
    line({ ev: 'end', outcome: 'aborted' });
    throw err;
  }
  if (task.payload.failOnce && ctx.attempt === 1) {
    line({ ev: 'end', outcome: 'retry' });
    throw new RetryableError('failing once, as asked');
  }
  line({ ev: 'end', outcome: 'success' });
  return { status: 'success', summary: 'done by ' + ctx.agentId };
};
`);
  const config = path.join(dir, 'baton.agent.json');
  fs.writeFileSync(config, JSON.stringify({
    capabilities: [capability], maxConcurrent: 3, poll: '* * * * * *', heartbeat: '*/2 * * * * *', graceSeconds: 2,
    executors: { [capability]: { module: executor } },
  }));

  const api = new URL(env.SUPABASE_URL);
  /** Every process started, in order (a restarted one is a new entry). */
  const procs: Proc[] = [];
  const proxies: FaultProxy[] = [];
  const errorLines: string[] = [];
  const faultCounts: Record<string, number> = {};
  let processesStarted = 0;

  /** Starts a process of `agent` behind `proxy`; the supervisor starts it again if it dies. */
  const launch = async (agent: string, token: string, proxy: FaultProxy, port: number): Promise<Proc> => {
    const logFile = fs.openSync(path.join(dir, `${agent}.log`), 'a');
    const child = spawn(process.execPath, [path.join(packageRoot, 'dist', 'cli', 'index.js'), 'agent', 'run', '--config', config], {
      env: { ...process.env, SUPABASE_URL: `http://127.0.0.1:${port}`, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, SUPABASE_ANON_KEY: '', BATON_AGENT_TOKEN: token, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', logFile],
    });
    processesStarted += 1;
    let rest = '';
    const proc: Proc = { agent, token, proxy, child, stopping: false, superseded: false, exited: Promise.resolve() };
    child.stdout!.on('data', (chunk: Buffer) => {
      fs.writeSync(logFile, chunk);
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop()!;
      for (const text of lines) {
        const entry = (() => { try { return JSON.parse(text) as { level?: number; msg?: string }; } catch { return { level: 50, msg: `not JSON: ${text}` }; } })();
        if ((entry.level ?? 0) >= 50) errorLines.push(`${agent}: ${entry.msg}`);
        if (entry.msg?.startsWith('a later process took over this agent')) proc.superseded = true;
      }
    });
    proc.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      fs.closeSync(logFile);
      resolve();
      // Restart=on-failure: a process that died (killed, or a start that failed) comes back a second later.
      if (!proc.stopping && (code !== 0 || signal)) {
        void sleep(1000).then(async () => {
          if (proc.stopping) return;
          await launch(agent, token, proxy, port);
        });
      }
    }));
    procs.push(proc);
    return proc;
  };

  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  const { token: senderToken } = await admin.createAgent({ id: `${tag}-sender` });
  const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: senderToken });
  const agents: Array<{ id: string; token: string; proxy: FaultProxy; port: number }> = [];
  for (let i = 0; i < count; i += 1) {
    const id = `${tag}-d${i}`;
    const { token } = await admin.createAgent({ id, capabilities: [capability], maxConcurrent: 3 });
    const proxy = new FaultProxy({ host: api.hostname, port: Number(api.port) }, random);
    proxies.push(proxy);
    agents.push({ id, token, proxy, port: await proxy.listen() });
  }
  for (const a of agents) await launch(a.id, a.token, a.proxy, a.port);

  const ids: string[] = [];
  const handBy = new Map<string, BatonClient>();
  const handResults: string[] = [];
  const started = Date.now();
  const until = started + scheduleSeconds * 1000;

  // The stream of work.
  const stream = (async () => {
    while (Date.now() < until) {
      const n = Math.max(1, Math.round(taskRate));
      const made = await sender.handoffMany(Array.from({ length: n }, () => {
        const kind = random();
        const ms = kind < 0.85 ? Math.round(between(100, 800)) : Math.round(between(6000, 8000));
        return {
          title: `fault work`, requiredCapabilities: [capability], leaseSeconds: LEASE_SECONDS, maxAttempts: 20,
          payload: { ms, failOnce: kind >= 0.7 && kind < 0.85 },
        };
      }));
      for (const m of made) if (m.task_id) ids.push(m.task_id);
      await sleep(1000);
    }
  })();

  // The faults.
  const fault = async (a: (typeof agents)[number], mode: FaultMode, seconds: number) => {
    faultCounts[mode] = (faultCounts[mode] ?? 0) + 1;
    a.proxy.set(mode);
    await sleep(seconds * 1000);
    a.proxy.set('pass');
  };
  const schedule = (async () => {
    if (!faults) return;
    const scenarios: Array<[number, () => Promise<void>]> = [
      // A second process of an agent starts while the first is cut off; then the first is heard again.
      [0.2, async () => {
        const a = agents[0]!;
        faultCounts['successor while cut off'] = 1;
        a.proxy.set('blackhole');
        await sleep(1500);
        const proxy = new FaultProxy({ host: api.hostname, port: Number(api.port) }, random);
        proxies.push(proxy);
        const port = await proxy.listen();
        agents[0] = { ...a, proxy, port };
        await launch(a.id, a.token, proxy, port);
        await sleep(4000);
        a.proxy.set('pass');
      }],
      // A claim made by hand, beside the daemon of the same agent.
      [0.35, async () => {
        const a = agents[1 % count]!;
        faultCounts['claim by hand'] = 1;
        const hand = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: a.token });
        for (let i = 0; i < 3; i += 1) {
          const task = await sender.handoff({ to: a.id, title: 'by hand', requiredCapabilities: [capability], payload: { ms: 300 } });
          const claimed = await hand.claim(task.id, { start: true, leaseSeconds: 120 }).catch(() => undefined);
          if (!claimed) { ids.push(task.id); continue; }
          handBy.set(task.id, hand);
          ids.push(task.id);
          void sleep(2000).then(() => hand.complete(task.id, claimed.claim_token, { status: 'success', summary: 'by hand' }))
            .catch((err: Error) => handResults.push(`the hand could not complete ${task.id}: ${err.message}`));
        }
      }],
      // SIGKILL while partitioned, and the same identity started again (through the same partition).
      [0.5, async () => {
        const a = agents[2 % count]!;
        faultCounts['killed while partitioned'] = 1;
        a.proxy.set('blackhole');
        await sleep(1000);
        const proc = procs.find((p) => p.agent === a.id && p.child.exitCode === null && !p.stopping);
        if (proc) { proc.killedAt = Date.now(); proc.child.kill('SIGKILL'); }
        await sleep(3000);
        a.proxy.set('pass');
      }],
    ];
    const pending = scenarios.map(([at, run]) => sleep(at * scheduleSeconds * 1000).then(run));
    while (Date.now() < until - 3000) {
      await sleep(between(1500, 4000));
      const a = agents[Math.floor(random() * agents.length)]!;
      if (a.proxy.current !== 'pass') continue;
      const mode = randomFaults[Math.floor(random() * randomFaults.length)]!;
      void fault(a, mode, mode === 'half-open' ? 3 : between(1, 5));
    }
    await Promise.all(pending);
  })();

  await Promise.all([stream, schedule]);
  await sleep(500);
  // Heal.
  for (const p of proxies) p.set('pass');
  const healedAt = Date.now();
  say(`seed ${seed}: ${ids.length} tasks handed off in ${scheduleSeconds} s; healed`);

  // Every agent claims again after the heal: one task addressed to each, from now on.
  const after = await Promise.all(agents.map((a) => sender.handoff({ to: a.id, title: 'after the heal', requiredCapabilities: [capability], payload: { ms: 200 }, leaseSeconds: LEASE_SECONDS })));

  const all = [...ids, ...after.map((t) => t.id)];
  const finalStatuses = ['completed', 'failed', 'rejected', 'cancelled'];
  let lastFinal = healedAt;
  // A backlog drains as long as it must; what fails is three minutes without a task becoming final.
  let deadline = Date.now() + 180_000;
  let open = Infinity;
  for (;;) {
    const { rows } = await db.query<{ open: number; last: Date | null }>(
      'select count(*) filter (where status not in (\'completed\', \'failed\', \'rejected\', \'cancelled\'))::int as open, max(completed_at) as last from task_handoffs where id = any($1)', [all]);
    if (rows[0]!.open === 0) { lastFinal = Math.max(healedAt, rows[0]!.last?.getTime() ?? healedAt); break; }
    if (rows[0]!.open < open) { open = rows[0]!.open; deadline = Date.now() + 180_000; }
    if (Date.now() > deadline) break;
    await sleep(250);
  }

  for (const p of procs) p.stopping = true;
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await Promise.all(proxies.map((p) => p.close()));

  // The history.
  const violations: string[] = [];
  const { rows: tasks } = await db.query<{ id: string; status: string; claimed_by: string | null; claim_incarnation: string | null; to_agent: string | null; result: { summary?: string } | null; completed_at: Date | null }>(
    'select id, status, claimed_by, claim_incarnation, to_agent, result, completed_at from task_handoffs where id = any($1)', [all]);
  const { rows: events } = await db.query<{ task_id: string; to_status: string; from_status: string | null; actor: string; at: Date; note: string | null }>(
    'select task_id, to_status, from_status, actor, at, note from task_events where task_id = any($1) and to_status is not null order by at, id', [all]);
  // A daemon of the agent that starts while the hand holds a claim hands it back, as every process
  // that starts does with the claims its agent held (begin_incarnation): then the hand's claim is
  // gone by the rules, and the task is anyone's. Only a claim taken from the hand otherwise breaks them.
  const restartedUnderHand = new Set(events.filter((e) => handBy.has(e.task_id) && e.to_status === 'pending' && /restarted/.test(e.note ?? '')).map((e) => e.task_id));
  violations.push(...handResults.filter((said) => ![...restartedUnderHand].some((id) => said.includes(id))));
  const runLines: RunLine[] = fs.existsSync(runsFile) ? fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as RunLine) : [];
  const killedAt = new Map(procs.filter((p) => p.killedAt).map((p) => [p.child.pid!, p.killedAt!]));
  interface Run { task: string; token: string; inc: string | null; agent: string; start: number; end: number; outcome?: string }
  const runsOf = new Map<string, Run[]>();
  for (const line of runLines) {
    const list = runsOf.get(line.task) ?? [];
    runsOf.set(line.task, list);
    if (line.ev === 'start') list.push({ task: line.task, token: line.token, inc: line.inc, agent: line.agent, start: line.at, end: killedAt.get(line.pid) ?? Infinity });
    else {
      const run = list.find((r) => r.token === line.token && r.outcome === undefined);
      if (run) { run.end = line.at; run.outcome = line.outcome; }
    }
  }
  const eventsOf = new Map<string, typeof events>();
  for (const e of events) eventsOf.set(e.task_id, [...(eventsOf.get(e.task_id) ?? []), e]);

  let runCount = 0;
  let rerunAfterSuccess = 0;
  for (const task of tasks) {
    const runs = (runsOf.get(task.id) ?? []).sort((a, b) => a.start - b.start);
    const history = eventsOf.get(task.id) ?? [];
    runCount += runs.length;
    if (!finalStatuses.includes(task.status)) violations.push(`${task.id} is still ${task.status}`);
    if (history.filter((e) => e.to_status === 'completed').length > 1) violations.push(`${task.id} completed twice`);
    if (new Set(runs.map((r) => r.token)).size !== runs.length) violations.push(`${task.id}: one claim ran twice`);
    if (handBy.has(task.id) && !restartedUnderHand.has(task.id)) {
      if (runs.length) violations.push(`${task.id} was claimed by hand, and a daemon ran it too`);
      if (task.status === 'completed' && task.result?.summary !== 'by hand') violations.push(`${task.id} was claimed by hand and completed by another`);
      continue;
    }
    const last = runs.at(-1);
    if (task.status === 'completed') {
      if (!last || last.outcome !== 'success') violations.push(`${task.id} completed, but not by its last run (${JSON.stringify(last)})`);
      else if (last.inc !== task.claim_incarnation) violations.push(`${task.id} completed under a claim of another process than its last run's`);
    }
    for (let k = 1; k < runs.length; k += 1) {
      const before = runs[k - 1]!;
      const run = runs[k]!;
      if (before.end > run.start) violations.push(`${task.id}: two holders at once (${before.agent} until ${before.end === Infinity ? 'never stopped' : new Date(before.end).toISOString()}, ${run.agent} from ${new Date(run.start).toISOString()})`);
      // An outcome held past its claim's end (cut off longer than the lease) is re-run: allowed, and counted.
      if (before.outcome === 'success') {
        rerunAfterSuccess += 1;
        if (rerunAfterSuccess === 1) say(`re-run after a success: ${JSON.stringify({ runs, history })}`);
      }
    }
    // Every run after the first is explained by a claim that went back (lapsed, released, retried, restarted).
    const handedBack = history.filter((e) => e.to_status === 'pending' && ['claimed', 'in_progress', 'input_required'].includes(e.from_status ?? '')).length;
    if (runs.length > 1 && handedBack < runs.length - 1) violations.push(`${task.id}: ran ${runs.length} times with ${handedBack} claims handed back`);
    if (last?.outcome === 'retry' && task.status !== 'failed') violations.push(`${task.id}: its last run asked for a retry, and it never ran again`);
  }
  for (const [i, t] of after.entries()) {
    const runs = runsOf.get(t.id) ?? [];
    if (!runs.some((r) => r.agent === agents[i]!.id && r.outcome === 'success')) violations.push(`${agents[i]!.id} did not claim again after the heal (${t.id})`);
  }
  const completed = tasks.filter((t) => t.status === 'completed').length;
  const afterDone = tasks.filter((t) => after.some((a) => a.id === t.id)).map((t) => t.completed_at?.getTime() ?? Infinity);
  const lastAt = Math.max(...tasks.map((t) => t.completed_at?.getTime() ?? 0));
  return {
    seed,
    tasks: tasks.length,
    runs: runCount,
    completed,
    failed: tasks.filter((t) => t.status === 'failed').length,
    tasksPerSecond: completed / Math.max(1, (lastAt - started) / 1000),
    healToLastFinalMs: lastFinal - healedAt,
    healToClaimsAgainMs: Math.max(...afterDone) - healedAt,
    faults: faultCounts,
    processesStarted,
    rerunAfterSuccess,
    violations,
    errorLines,
  };
}
