import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding package.json, supabase/ and migrations/ (from src/ or dist/ alike). */
export const packageRoot = fileURLToPath(new URL('../../', import.meta.url));
export const bootstrapDir = path.join(packageRoot, 'migrations');

export interface StackPaths {
  dir: string;
  pgdata: string;
  secrets: string;
  runtime: string;
  log: string;
}

export function stackPaths(dir: string): StackPaths {
  return {
    dir,
    pgdata: path.join(dir, 'pgdata'),
    secrets: path.join(dir, 'secrets.json'),
    runtime: path.join(dir, 'runtime.json'),
    log: path.join(dir, 'stack.log'),
  };
}

export class StackError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
    this.name = 'StackError';
  }
}

/** Where, as root, the stack keeps what the `postgres` user must reach and the stack folder cannot. */
export const sharedRoot = '/var/lib/baton';

/** The first folder from `target` up that others may not enter, if any. */
export function closedFolderAbove(target: string): string | undefined {
  for (let current = path.resolve(target); ; current = path.dirname(current)) {
    if (fs.existsSync(current) && (fs.statSync(current).mode & 0o001) === 0) return current;
    if (path.dirname(current) === current) return undefined;
  }
}

/** Makes `folder` and the missing ones above it, each open to all (0755, whatever the umask). */
export function openFolders(folder: string): void {
  const missing: string[] = [];
  for (let current = path.resolve(folder); !fs.existsSync(current); current = path.dirname(current)) missing.unshift(current);
  for (const made of missing) {
    fs.mkdirSync(made, { mode: 0o755 });
    fs.chmodSync(made, 0o755);
  }
}

/**
 * As root, Postgres runs as the user `postgres`, which must reach its data folder. Where a folder above
 * the stack folder is closed to it (a clone in /root, under mktemp -d), a new cluster lives in
 * /var/lib/baton/clusters instead, and the stack folder's `pgdata` links to it. A cluster made in place
 * whose folder was closed since cannot be moved silently: that is an error that says which folder.
 */
export function placeCluster(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const { pgdata } = stackPaths(dir);
  const closed = closedFolderAbove(dir);
  if (!closed) return;
  const existing = fs.lstatSync(pgdata, { throwIfNoEntry: false });
  if (existing) {
    if (existing.isSymbolicLink()) return;
    throw new StackError(
      `running as root, Postgres runs as the user "postgres", which cannot enter ${closed}, above this stack's data`,
      `Let it in (chmod o+x ${closed}), or move the stack where every folder above it is open to others.`,
    );
  }
  // crypto only here, when a cluster is placed: every CLI call loads this module, and few place a cluster.
  const shared = path.join(sharedRoot, 'clusters', process.getBuiltinModule('node:crypto').createHash('sha256').update(fs.realpathSync(dir)).digest('hex').slice(0, 16));
  openFolders(path.dirname(shared));
  fs.rmSync(shared, { recursive: true, force: true });
  fs.symlinkSync(shared, pgdata);
}
