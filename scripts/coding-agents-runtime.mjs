#!/usr/bin/env node
/**
 * Installs the coding-agent CLIs the tests run against, once, into a cache folder: Claude Code, Codex
 * and Gemini CLI from npm (about 900 MB together). Prints their paths as JSON. Run again, it only checks.
 *
 *   node scripts/coding-agents-runtime.mjs      # BATON_CODING_AGENTS_DIR, else ~/.cache/baton/coding-agents-<versions>
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const versions = Object.freeze({
  '@anthropic-ai/claude-code': '2.1.332',
  '@openai/codex': '0.171.0',
  '@google/gemini-cli': '0.61.0',
});

export function runtimeDir() {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const tag = crypto.createHash('sha256').update(JSON.stringify(versions)).digest('hex').slice(0, 10);
  return path.resolve(process.env.BATON_CODING_AGENTS_DIR || path.join(cache, 'baton', `coding-agents-${tag}`));
}

/** The installed CLIs' paths, installing them first when they are missing. */
export function ensureCodingAgents({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = runtimeDir();
  const bin = path.join(dir, 'node_modules', '.bin');
  const paths = { dir, claude: path.join(bin, 'claude'), codex: path.join(bin, 'codex'), gemini: path.join(bin, 'gemini') };
  const ready = path.join(dir, 'ready.json');
  if (fs.existsSync(ready) && JSON.stringify(JSON.parse(fs.readFileSync(ready, 'utf8'))) === JSON.stringify(versions)) return paths;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'baton-coding-agents', private: true }));
  log(`installing ${Object.entries(versions).map(([n, v]) => `${n}@${v}`).join(', ')} into ${dir} (about a minute, 900 MB; once)`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...Object.entries(versions).map(([n, v]) => `${n}@${v}`)],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const cli of ['claude', 'codex', 'gemini']) execFileSync(paths[cli], ['--version'], { stdio: 'ignore', timeout: 120_000 });
  fs.writeFileSync(ready, JSON.stringify(versions));
  return paths;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(ensureCodingAgents())}\n`);
}
