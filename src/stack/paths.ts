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

/**
 * As root, Postgres runs as the `postgres` user, which must be able to walk down to its data folder.
 * Finds the first existing folder on the way that others cannot enter, before Postgres fails obscurely.
 */
export function assertReachableByPostgres(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    if (fs.existsSync(current) && (fs.statSync(current).mode & 0o001) === 0) {
      throw new StackError(
        `running as root, Postgres runs as the user "postgres", which cannot enter ${current}`,
        'Put the stack where every folder above it is open to others, e.g. BATON_STACK_DIR=/var/tmp/baton-stack (or --dir).',
      );
    }
    if (path.dirname(current) === current) return;
  }
}
