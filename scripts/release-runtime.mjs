#!/usr/bin/env node
/**
 * Builds the previous release of Baton, once, into a cache folder, for the upgrade test
 * (test/upgrade.test.ts): its files from git at the commit CHANGELOG.md names for its newest release, its own node_modules from its
 * own lockfile (`npm ci`, whose prepare script builds its dist/). Prints the folder. Run again, it only
 * checks.
 *
 *   node scripts/release-runtime.mjs      # BATON_RELEASE_DIR, else ~/.cache/baton/release-<sha>
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const repo = path.resolve(import.meta.dirname, '..');

/**
 * The releases CHANGELOG.md names, newest first: each heading `## <version> — <date>, cut from
 * `<commit>``. A section not yet released names no commit.
 */
export function releases(changelog = fs.readFileSync(path.join(repo, 'CHANGELOG.md'), 'utf8')) {
  return [...changelog.matchAll(/^## (\d+\.\d+\.\d+) — ([^\n]*?), cut from `([0-9a-f]{7,40})`/gm)]
    .map(([, version, date, commit]) => ({ version, date, commit }));
}

/** The previous release: the newest the changelog names with a commit of its own. */
const [newest] = releases();
if (!newest) throw new Error('CHANGELOG.md names no release cut from a commit (## <version> — <date>, cut from `<commit>`)');
export const previousRelease = newest.commit;
export const previousVersion = newest.version;

export function ensureRelease(ref = previousRelease) {
  let sha;
  try {
    sha = execFileSync('git', ['-C', repo, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch {
    throw new Error(`the previous release ${ref} is not in this clone's history: fetch it (git fetch --unshallow), or set BATON_RELEASE_DIR to a folder where it is built`);
  }
  const dir = process.env.BATON_RELEASE_DIR
    || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'baton', `release-${sha.slice(0, 12)}`);
  if (fs.existsSync(path.join(dir, 'ready.json'))) return dir;
  const partial = `${dir}.${process.pid}.tmp`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  execFileSync('sh', ['-c', 'git -C "$0" archive --format=tar "$1" | tar -x -C "$2"', repo, sha, partial]);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: partial, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, CI: 'true' } });
  fs.writeFileSync(path.join(partial, 'ready.json'), `${JSON.stringify({ sha, builtAt: new Date().toISOString() })}\n`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
  return dir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  process.stdout.write(`${ensureRelease()}\n`);
}
