/**
 * The embedded stack in a process of its own (`baton stack serve`), as it runs beside real agents, so
 * that a bench can tell the gateway's CPU from the agents'.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { reclaimOrphans } from '../src/stack/background.js';
import { freePort } from '../src/stack/ports.js';
import { readRuntime, readSecrets, stackEnv, superuserOf, type StackEnv } from '../src/stack/state.js';
import type { StackPids } from './postgres-cpu.js';

const cli = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

export interface StackProcess extends StackPids {
  env: StackEnv;
  /** The cluster's superuser, for what `postgres` may not do (ALTER SYSTEM). */
  adminUrl: string;
  stop(): Promise<void>;
}

export async function startStackProcess(dir: string): Promise<StackProcess> {
  const apiPort = await freePort();
  const dbPort = await freePort([apiPort]);
  const child = spawn(process.execPath, [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : []), '--import', 'tsx', cli, 'stack', 'serve', '--dir', dir, '--api-port', String(apiPort), '--db-port', String(dbPort)],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const exited = once(child, 'exit');
  // A bench that ends without stopping it (an error, Ctrl-C) takes its stack with it: no Postgres or
  // PostgREST is left running behind a run that died.
  // One SIGTERM, once: the handler below and the exit it makes would otherwise send two.
  let told = false;
  const orphaned = () => { if (child.exitCode === null && !told) { told = true; child.kill('SIGTERM'); } };
  process.once('exit', orphaned);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { orphaned(); process.exit(128 + (signal === 'SIGINT' ? 2 : 15)); });
  const deadline = Date.now() + 120_000;
  let runtime: ReturnType<typeof readRuntime>;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the stack exited (${child.exitCode}): ${stderr}`);
    runtime = readRuntime(dir);
    if (runtime?.postgresPid && runtime.postgrestPid && await fetch(`http://127.0.0.1:${apiPort}/health`).then((r) => r.ok, () => false)) break;
    if (Date.now() > deadline) throw new Error(`the stack did not answer within 2 minutes: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const secrets = readSecrets(dir)!;
  return {
    env: stackEnv(secrets, apiPort, dbPort),
    adminUrl: superuserOf(secrets, dbPort).url,
    // The stack's Node process (gateway and realtime); Postgres and PostgREST are its children.
    pid: child.pid!,
    postgresPid: runtime.postgresPid,
    postgrestPid: runtime.postgrestPid,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      // A stack process that died before (a crash, SIGKILL) left its PostgREST and Postgres running:
      // they are this folder's, and are stopped here as `baton stack start` would reclaim them.
      await reclaimOrphans(dir);
    },
  };
}
