/** `baton stack start|stop`: the stack as a background process that outlives the command. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processSettings } from '../config.js';
import { placeCluster, StackError, stackPaths } from './paths.js';
import { assertPortFree } from './ports.js';
import pg from 'pg';
import { isAlive, readRuntime, readRuntimeFile, readSecrets, removeRuntime, stackEnv, type Runtime } from './state.js';

const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

function logTail(file: string, lines = 15): string {
  if (!fs.existsSync(file)) return '';
  return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

/** How long a health check waits for an answer. */
const HEALTH_TIMEOUT_MS = 3_000;

/** True once the gateway answers and PostgREST behind it serves the schema from its database. */
async function apiAnswers(apiPort: number, apiKey: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${apiPort}/rest/v1/task_status_transitions?select=from_status&limit=1`, {
      headers: { apikey: apiKey }, signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
    });
    // The anon role may not read the table: a refusal from the database is an answer from the database.
    return res.status < 500;
  } catch {
    return false;
  }
}

/** True when Postgres itself answers a query. */
async function databaseAnswers(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: HEALTH_TIMEOUT_MS, query_timeout: HEALTH_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface StackHealth {
  /** The stack's own process lives. */
  running: boolean;
  /** The API answers through the gateway and PostgREST, from the database. */
  api: boolean;
  /** Postgres answers a query. */
  database: boolean;
  runtime?: Runtime;
}

/** What runs in `dir`, and whether its API and its database answer now (not only whether it was started). */
export async function stackHealth(dir: string): Promise<StackHealth> {
  const runtime = readRuntime(dir);
  const secrets = readSecrets(dir);
  if (!runtime || !secrets) return { running: false, api: false, database: false };
  const env = stackEnv(secrets, runtime.apiPort, runtime.dbPort);
  const [api, database] = await Promise.all([apiAnswers(runtime.apiPort, secrets.publishableKey), databaseAnswers(env.DATABASE_URL)]);
  return { running: true, api, database, runtime };
}

/**
 * Starts `baton stack serve` detached and returns once the API answers. A stack already running in
 * `dir` is left alone and reported.
 */
export async function startInBackground(
  { dir, apiHost, apiPort, dbPort, cliEntry, realtimePlan }: { dir: string; apiHost: string; apiPort: number; dbPort: number; cliEntry: string; realtimePlan?: string },
): Promise<{ alreadyRunning: boolean; runtime: Runtime }> {
  const running = readRuntime(dir);
  if (running) return { alreadyRunning: true, runtime: running };

  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  placeCluster(dir);
  await reclaimOrphans(dir);
  await assertPortFree(apiPort, 'API', '--api-port or BATON_API_PORT');
  await assertPortFree(dbPort, 'database', '--db-port or BATON_DB_PORT');

  const { log } = stackPaths(dir);
  const out = fs.openSync(log, 'a');
  const child = spawn(
    process.execPath,
    [cliEntry, 'stack', 'serve', '--dir', dir, '--api-host', apiHost, '--api-port', String(apiPort), '--db-port', String(dbPort), ...(realtimePlan ? ['--realtime-plan', realtimePlan] : [])],
    { detached: true, stdio: ['ignore', out, out], env: { ...process.env, LOG_LEVEL: processSettings.logLevel('info') } },
  );
  fs.closeSync(out);
  let exited: number | null = null;
  child.on('exit', (code) => { exited = code ?? 1; });
  child.unref();

  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited !== null) {
      throw new StackError(`the stack exited while starting (code ${exited}):\n${logTail(log)}`, `The full log is in ${log}.`);
    }
    const runtime = readRuntime(dir);
    const secrets = readSecrets(dir);
    if (runtime && secrets && (await apiAnswers(runtime.apiPort, secrets.publishableKey))) {
      return { alreadyRunning: false, runtime };
    }
    await sleep(200);
  }
  if (child.pid) process.kill(child.pid, 'SIGTERM');
  throw new StackError(`the stack did not answer within ${START_TIMEOUT_MS / 1000} s`, `See ${log}.`);
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/**
 * After the stack process itself died (SIGKILL, out of memory), its PostgREST and Postgres may still
 * run, holding the ports. They belong to this folder, so they are stopped here: PostgREST by the pid the
 * stack recorded, Postgres by the pid in its own postmaster.pid (SIGINT: a fast, clean shutdown).
 */
export async function reclaimOrphans(dir: string): Promise<void> {
  const runtime = readRuntimeFile(dir);
  if (runtime?.postgrestPid && isAlive(runtime.postgrestPid)) {
    process.kill(runtime.postgrestPid, 'SIGTERM');
    await waitForExit(runtime.postgrestPid, 5000);
  }
  const postmaster = path.join(stackPaths(dir).pgdata, 'postmaster.pid');
  if (fs.existsSync(postmaster)) {
    const pid = Number(fs.readFileSync(postmaster, 'utf8').split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
      process.kill(pid, 'SIGINT');
      if (!(await waitForExit(pid, 15_000))) {
        throw new StackError(`an earlier Postgres of this stack (pid ${pid}) would not stop`, `Stop it by hand (kill ${pid}), then start again.`);
      }
    }
  }
  removeRuntime(dir);
}

/** Stops the stack running in `dir`; false when none was running. */
export async function stopInBackground(dir: string): Promise<boolean> {
  const runtime = readRuntime(dir);
  if (!runtime) return false;
  process.kill(runtime.pid, 'SIGTERM');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(runtime.pid)) {
    if (Date.now() > deadline) {
      throw new StackError(`the stack (pid ${runtime.pid}) did not stop within ${STOP_TIMEOUT_MS / 1000} s`, `See ${stackPaths(dir).log}.`);
    }
    await sleep(100);
  }
  return true;
}
