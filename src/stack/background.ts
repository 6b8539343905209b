/** `baton stack start|stop`: the stack as a background process that outlives the command. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertReachableByPostgres, StackError, stackPaths } from './paths.js';
import { assertPortFree } from './ports.js';
import { isAlive, readRuntime, readSecrets, type Runtime } from './state.js';

const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

function logTail(file: string, lines = 15): string {
  if (!fs.existsSync(file)) return '';
  return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

/** True once the gateway answers and PostgREST behind it serves the schema. */
async function apiAnswers(apiPort: number, anonKey: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${apiPort}/rest/v1/`, { headers: { apikey: anonKey } });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Starts `baton stack serve` detached and returns once the API answers. A stack already running in
 * `dir` is left alone and reported.
 */
export async function startInBackground(
  { dir, apiPort, dbPort, cliEntry }: { dir: string; apiPort: number; dbPort: number; cliEntry: string },
): Promise<{ alreadyRunning: boolean; runtime: Runtime }> {
  const running = readRuntime(dir);
  if (running) return { alreadyRunning: true, runtime: running };

  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  assertReachableByPostgres(dir);
  await assertPortFree(apiPort, 'API', '--api-port or BATON_API_PORT');
  await assertPortFree(dbPort, 'database', '--db-port or BATON_DB_PORT');

  const { log } = stackPaths(dir);
  const out = fs.openSync(log, 'a');
  const child = spawn(
    process.execPath,
    [cliEntry, 'stack', 'serve', '--dir', dir, '--api-port', String(apiPort), '--db-port', String(dbPort)],
    { detached: true, stdio: ['ignore', out, out], env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' } },
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
    if (runtime && secrets && (await apiAnswers(runtime.apiPort, secrets.anonKey))) {
      return { alreadyRunning: false, runtime };
    }
    await sleep(200);
  }
  if (child.pid) process.kill(child.pid, 'SIGTERM');
  throw new StackError(`the stack did not answer within ${START_TIMEOUT_MS / 1000} s`, `See ${log}.`);
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
