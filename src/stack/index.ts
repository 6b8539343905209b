/**
 * The embedded, Docker-free Supabase-compatible stack: a real Postgres, the bootstrap SQL, Baton's
 * migrations applied by the real Supabase CLI, a real PostgREST, and a gateway serving it at /rest/v1.
 */
import fs from 'node:fs';
import path from 'node:path';
import { silentLogger, type Logger } from '../logger.js';
import { startGateway, type GatewayHandle, type GatewayKeys } from './gateway.js';
import { applyBootstrap, grantAsSupautils, pushMigrations } from './migrate.js';
import { placeCluster, stackPaths } from './paths.js';
import { assertPortFree, freePort } from './ports.js';
import { startPostgres, unixSocketDirectory } from './postgres.js';
import { startPostgrest } from './postgrest.js';
import { parseRealtimePlan } from './quotas.js';
import { startRealtime } from './realtime.js';
import { supervise, type Supervisor } from './supervise.js';
import {
  loadOrCreateSecrets, removeRuntime, stackEnv, superuserOf, withAdminPassword, writeRuntime, type Runtime, type Secrets, type StackEnv,
} from './state.js';
import { mintRoleToken, publicJwk } from '../tokens.js';

export interface StackOptions {
  /** Folder for the data, secrets and logs; kept between runs. */
  dir: string;
  apiPort: number;
  dbPort: number;
  /** Where the API listens: loopback (the default), or e.g. 0.0.0.0 to serve other containers. */
  apiHost?: string;
  log?: Logger;
  /** The Realtime plan whose quotas it keeps (quotas.ts): Free's unless said. */
  realtimePlan?: string;
}

export interface Stack {
  env: StackEnv;
  /**
   * The cluster's superuser (`supabase_admin`; `postgres` in a stack made before it had one), as the
   * stack's own services connect. Not part of `env`: a project's code works as `postgres`, as on hosted.
   */
  adminUrl: string;
  apiPort: number;
  dbPort: number;
  /** The gateway alone, stopped and started again on the same port (to prove clients ride it out). */
  gateway: { stop(): Promise<void>; start(): Promise<void> };
  /** Postgres alone, stopped (not restarted until start) and started again: an outage, to ride out. */
  database: { stop(): Promise<void>; start(): Promise<void> };
  stop(): Promise<void>;
}

export async function startStack({ dir, apiPort, dbPort, apiHost = '127.0.0.1', log = silentLogger, realtimePlan }: StackOptions): Promise<Stack> {
  const quotas = parseRealtimePlan(realtimePlan);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  placeCluster(dir);
  await assertPortFree(apiPort, 'API', '--api-port or BATON_API_PORT');
  await assertPortFree(dbPort, 'database', '--db-port or BATON_DB_PORT');
  let secrets = await loadOrCreateSecrets(dir);
  // A new cluster is made as hosted's: a superuser of its own, and `postgres` not one.
  if (!fs.existsSync(path.join(stackPaths(dir).pgdata, 'PG_VERSION'))) secrets = withAdminPassword(dir, secrets);
  const env = stackEnv(secrets, apiPort, dbPort);
  const superuser = superuserOf(secrets, dbPort);

  // Stopped in reverse order of starting: the gateway first, Postgres last.
  const running: Array<() => Promise<void>> = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    removeRuntime(dir);
    for (const stopOne of running.reverse()) await stopOne();
  };

  try {
    const t0 = Date.now();
    // Postgres and PostgREST are started again if they die; the runtime file follows their pids.
    let runtime: Runtime | undefined;
    const recordPid = (key: 'postgresPid' | 'postgrestPid') => (pid: number) => {
      if (runtime && !stopped) writeRuntime(dir, runtime = { ...runtime, [key]: pid });
    };
    const superviseDatabase = () => supervise('postgres',
      () => startPostgres({ pgdata: stackPaths(dir).pgdata, port: dbPort, superuser, log }), log, recordPid('postgresPid'));
    let postgres: Supervisor | undefined = await superviseDatabase();
    running.push(async () => { await postgres?.stop(); });
    log.info({ port: dbPort, ms: Date.now() - t0 }, 'postgres is up');

    await applyBootstrap(superuser.url, { authenticator: secrets.authenticatorPassword, postgres: secrets.dbPassword });
    const pushed = await pushMigrations(env.DATABASE_URL);
    await grantAsSupautils(superuser.url);
    log.info({ output: pushed.trim().split('\n').slice(-2).join(' ') }, 'migrations applied');

    // PostgREST reaches Postgres through its Unix socket where it has one: less CPU than TCP for both.
    const socket = await unixSocketDirectory(superuser.url, dbPort);
    const postgrestPort = await freePort([apiPort, dbPort]);
    const postgrestAdminPort = await freePort([apiPort, dbPort, postgrestPort]);
    const postgrest = await supervise('postgrest', () => startPostgrest({
      adminPort: postgrestAdminPort,
      dbUri: socket
        ? `postgresql://authenticator:${secrets.authenticatorPassword}@/postgres?host=${encodeURIComponent(socket)}&port=${dbPort}`
        : `postgresql://authenticator:${secrets.authenticatorPassword}@127.0.0.1:${dbPort}/postgres`,
      port: postgrestPort,
      // Tokens verify against both key systems: the signing key's public half and the legacy secret.
      jwks: { keys: [publicJwk(secrets.signingKey), { kty: 'oct', alg: 'HS256', k: Buffer.from(secrets.jwtSecret).toString('base64url') }] },
      log,
    }), log, recordPid('postgrestPid'));
    running.push(postgrest.stop);

    const realtime = await startRealtime({ databaseUrl: superuser.url, jwks: [publicJwk(secrets.signingKey)], legacySecret: secrets.jwtSecret, log, quotas });
    running.push(realtime.stop);

    const openGateway = () => startGateway({ realtime, host: apiHost, port: apiPort, upstreamPort: postgrestPort, keys: gatewayKeys(secrets) });
    let gateway: GatewayHandle | undefined = await openGateway();
    running.push(async () => { await gateway?.stop(); });

    runtime = { pid: process.pid, apiPort, dbPort, postgrestPort, postgrestPid: postgrest.pid, postgresPid: postgres.pid, startedAt: new Date().toISOString() };
    writeRuntime(dir, runtime);
    log.info({ url: env.SUPABASE_URL, ms: Date.now() - t0 }, 'stack is ready');
    const gatewayControl = {
      async stop() { await gateway?.stop(); gateway = undefined; },
      async start() { gateway ??= await openGateway(); },
    };
    const databaseControl = {
      async stop() { await postgres?.stop(); postgres = undefined; },
      async start() { postgres ??= await superviseDatabase(); recordPid('postgresPid')(postgres.pid); },
    };
    return { env, adminUrl: superuser.url, apiPort, dbPort, gateway: gatewayControl, database: databaseControl, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What the gateway accepts: the keys of both key systems, and role tokens minted with the signing key. */
function gatewayKeys(secrets: Secrets): GatewayKeys {
  return {
    legacy: [secrets.anonKey, secrets.serviceRoleKey],
    opaque: { [secrets.publishableKey]: 'anon', [secrets.secretKey]: 'service_role' },
    mintRoleToken: (role, seconds) => mintRoleToken({ signingKey: secrets.signingKey }, role, seconds),
    jwks: [publicJwk(secrets.signingKey)],
    legacySecret: true,
  };
}

export type { StackEnv } from './state.js';
