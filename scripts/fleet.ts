/**
 * A fleet of daemons as their own processes (`baton agent run`), for the soak and the chaos run: each
 * runs a module executor that records every run of a task in one file, so that a task lost or run twice
 * shows; its log lines are counted by level.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAdminClient, parseSigningKey, startStack, type AdminClient } from '../src/index.js';
import type { StackEnv } from '../src/stack/state.js';
import { packageRoot } from '../src/stack/paths.js';
import { freePort } from '../src/stack/ports.js';

export interface FleetStack {
  env: StackEnv;
  /** A folder for the fleet's files. */
  work: string;
  db: pg.Pool;
  admin: AdminClient;
  close(): Promise<void>;
}

/**
 * An embedded stack in a throwaway folder, with Baton's quotas raised as an operator does for a bulk
 * run, and Realtime's plan as given (none by default: the soak and the chaos run measure Baton, not a plan).
 */
export async function fleetStack(prefix: string, { realtimePlan = 'unlimited' }: { realtimePlan?: string } = {}): Promise<FleetStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `baton-${prefix}-`));
  fs.chmodSync(dir, 0o755);
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  const apiPort = await freePort();
  const stack = await startStack({ dir: path.join(dir, 'stack'), apiPort, dbPort: await freePort([apiPort]), realtimePlan });
  const { env } = stack;
  const db = new pg.Pool({ connectionString: env.DATABASE_URL, max: 4 });
  db.on('error', () => undefined);
  await db.query('update baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'key') });
  return {
    env, work, db, admin,
    async close() {
      await db.end();
      await stack.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface FleetDaemon {
  id: string;
  token: string;
  child: ChildProcess;
  errors: string[];
  warnings: number;
  /** Settles when the current process exits. */
  exited: Promise<void>;
}

export interface Fleet {
  /** The file each run of a task appends its id to. */
  runsFile: string;
  config: string;
  start(id: string, token: string): FleetDaemon;
  /** Starts the daemon's process again, as a supervisor would. */
  restart(daemon: FleetDaemon): void;
  /** How often each task ran. */
  runs(): Map<string, number>;
  stop(): Promise<void>;
}

/** Resident memory of a process, in MiB (from /proc; Linux only). */
export function rssMiB(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

export function fleet(
  { env, work, capability, workMs, maxConcurrent }: { env: StackEnv; work: string; capability: string; workMs: [number, number]; maxConcurrent: number },
): Fleet {
  const runsFile = path.join(work, 'runs.log');
  const executor = path.join(work, 'executor.mjs');
  fs.writeFileSync(executor, `import fs from 'node:fs';
export default async (task) => {
  fs.appendFileSync(${JSON.stringify(runsFile)}, task.id + '\\n');
  await new Promise((r) => setTimeout(r, ${workMs[0]} + Math.random() * ${workMs[1] - workMs[0]}));
  return { status: 'success' };
};
`);
  const config = path.join(work, 'baton.agent.json');
  fs.writeFileSync(config, JSON.stringify({ capabilities: [capability], maxConcurrent, executors: { [capability]: { module: executor } } }));
  const daemons: FleetDaemon[] = [];

  const launch = (daemon: FleetDaemon) => {
    const child = spawn(process.execPath, [path.join(packageRoot, 'dist', 'cli', 'index.js'), 'agent', 'run', '--config', config], {
      env: { ...process.env, SUPABASE_URL: env.SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, BATON_AGENT_TOKEN: daemon.token, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let rest = '';
    const read = (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop()!;
      for (const line of lines.filter(Boolean)) {
        let entry: { level?: number; msg?: string };
        try { entry = JSON.parse(line) as typeof entry; } catch { entry = { level: 50, msg: line }; }
        if ((entry.level ?? 0) >= 50) daemon.errors.push(String(entry.msg));
        else if ((entry.level ?? 0) >= 40) daemon.warnings += 1;
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    daemon.child = child;
    daemon.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  };

  return {
    runsFile,
    config,
    start(id, token) {
      const daemon = { id, token, errors: [], warnings: 0 } as unknown as FleetDaemon;
      launch(daemon);
      daemons.push(daemon);
      return daemon;
    },
    restart: launch,
    runs() {
      const runs = new Map<string, number>();
      if (!fs.existsSync(runsFile)) return runs;
      for (const id of fs.readFileSync(runsFile, 'utf8').split('\n').filter(Boolean)) runs.set(id, (runs.get(id) ?? 0) + 1);
      return runs;
    },
    async stop() {
      for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGTERM');
      await Promise.all(daemons.map((d) => d.exited));
    },
  };
}
