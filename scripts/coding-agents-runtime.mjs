#!/usr/bin/env node
/**
 * Installs the coding-agent CLIs the tests run against, once, into a cache folder: Claude Code, Codex
 * and Gemini CLI from npm (about 900 MB together); and Gemini CLI's A2A server (A2A 0.3, about 500 MB)
 * into a folder of its own. Prints their paths as JSON. Run again, it only checks.
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

/** Gemini CLI's A2A server: its only release, which speaks A2A 0.3. */
export const a2aServerVersions = Object.freeze({ '@google/gemini-cli-a2a-server': '0.25.2' });

const cacheDir = (kind, pinned) => {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const tag = crypto.createHash('sha256').update(JSON.stringify(pinned)).digest('hex').slice(0, 10);
  return path.join(cache, 'baton', `${kind}-${tag}`);
};

export function runtimeDir() {
  return path.resolve(process.env.BATON_CODING_AGENTS_DIR || cacheDir('coding-agents', versions));
}

/** Installs the pinned packages into `dir` unless it holds them already; each of `bins` must then answer --version. */
function ensureInstalled(dir, pinned, bins, size, log) {
  const ready = path.join(dir, 'ready.json');
  if (fs.existsSync(ready) && JSON.stringify(JSON.parse(fs.readFileSync(ready, 'utf8'))) === JSON.stringify(pinned)) return;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'baton-test-tools', private: true }));
  log(`installing ${Object.entries(pinned).map(([n, v]) => `${n}@${v}`).join(', ')} into ${dir} (about a minute, ${size}; once)`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...Object.entries(pinned).map(([n, v]) => `${n}@${v}`)],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const bin of bins) execFileSync(bin, ['--version'], { stdio: 'ignore', timeout: 120_000 });
  fs.writeFileSync(ready, JSON.stringify(pinned));
}

/** The installed CLIs' paths, installing them first when they are missing. */
export function ensureCodingAgents({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = runtimeDir();
  const bin = path.join(dir, 'node_modules', '.bin');
  const paths = { dir, claude: path.join(bin, 'claude'), codex: path.join(bin, 'codex'), gemini: path.join(bin, 'gemini') };
  ensureInstalled(dir, versions, [paths.claude, paths.codex, paths.gemini], '900 MB', log);
  return paths;
}

/** Gemini CLI's A2A server's start script, installing it first when it is missing. */
export function ensureGeminiA2AServer({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dir = cacheDir('gemini-a2a', a2aServerVersions);
  const server = path.join(dir, 'node_modules', '@google', 'gemini-cli-a2a-server', 'dist', 'a2a-server.mjs');
  // It has no --version: node checks that the script parses.
  ensureInstalled(dir, a2aServerVersions, [], '500 MB', log);
  execFileSync(process.execPath, ['--check', server], { stdio: 'ignore' });
  return { dir, server };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify({ ...ensureCodingAgents(), a2aServer: ensureGeminiA2AServer().server })}\n`);
}
