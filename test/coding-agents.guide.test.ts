/**
 * docs/coding-agents.md followed from its first command to its last, in a folder of the test's own:
 * every shell block of "Ten minutes, step by step" is run by bash as written, and each JSON block is
 * saved where the page says. The page's install line is the one thing not run: the three CLIs come from
 * the suite's cache (scripts/coding-agents-runtime.mjs), put first on the PATH. The providers' keys and
 * base URLs point at a scripted model server, the one double, which plays the three agents' models.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JS script
import { ensureCodingAgents } from '../scripts/coding-agents-runtime.mjs';
import { cliPath } from './cli.js';
import { makeStackDir, removeStackFolder } from './global-setup.js';
import { startModelServer, type ModelServer, type Reply, type Turn } from './model-server.js';
import { runBlock } from './shell.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const page = fs.readFileSync(path.join(root, 'docs', 'coding-agents.md'), 'utf8');
const steps = page.slice(page.indexOf('## Ten minutes, step by step'), page.indexOf('## The executor\'s options'));
const blocks = [...steps.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!] as const);
const shellBlocks = blocks.filter(([lang]) => lang === 'sh').map(([, text]) => text);
/** Each JSON block and the file the sentence before it names. */
const jsonFiles = [...steps.matchAll(/`([a-z]+\/baton\.agent\.json)`[^`]*?:\n\n```json\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!] as const);

const paths = ensureCodingAgents({ log: () => undefined }) as { claude: string; codex: string; gemini: string };
let dir = '';
let server: ModelServer;
let env: NodeJS.ProcessEnv;

const shells = { anthropic: 'Bash', openai: 'exec_command', gemini: 'run_shell_command' } as const;
const inputOf = (turn: Turn, command: string) => (turn.api === 'anthropic' ? { command, description: 'run it' } : turn.api === 'openai' ? { cmd: command } : { command });

/** The three agents' models: write the file, read it back, run it. */
function script(turn: Turn): Reply {
  const run = (command: string): Reply => ({ tool: shells[turn.api], input: inputOf(turn, command) });
  const ran = turn.entries.filter((e) => e.role === 'assistant' && e.tool).length;
  const output = turn.entries.filter((e) => e.role === 'tool').at(-1)?.text ?? '';
  if (turn.all.includes('Write hello.py')) return ran ? { text: 'Wrote hello.py.' } : run(`printf 'print("hello")\\n' > outputs/hello.py`);
  if (turn.all.includes('Review hello.py')) return ran ? { text: `Looks right: ${/print\("hello"\)/.test(output) ? 'it prints hello' : 'no file to read'}.` } : run('cat inputs/hello.py');
  if (turn.all.includes('Run hello.py')) return ran ? { text: `It prints: ${/hello/.test(output) ? 'hello' : 'nothing'}` } : run('python3 inputs/hello.py');
  return { text: 'nothing to do' };
}

/** A block of the page, run in the test's environment. */
const bash = (script: string, cwd: string) => runBlock(script, env, cwd);

/** The page's daemons run detached (`&` in a subshell): found by their working folder, under the test's. */
function daemonsUnder(folder: string): number[] {
  return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((pid) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/cwd`).startsWith(`${folder}/`) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('agent\0run');
    } catch {
      return false;
    }
  }).map(Number);
}

beforeAll(async () => {
  server = await startModelServer(script);
  dir = makeStackDir('baton-coding-guide-');
  const bin = path.join(dir, '.bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'baton'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(cliPath)} "$@"\n`, { mode: 0o755 });
  for (const cli of ['claude', 'codex', 'gemini'] as const) fs.symlinkSync(paths[cli], path.join(bin, cli));
  const home = path.join(dir, '.home');
  fs.mkdirSync(path.join(home, '.codex'), { recursive: true });
  fs.writeFileSync(path.join(home, '.codex', 'config.toml'), [
    'model = "gpt-5.1-codex"', 'model_provider = "scripted"', '',
    '[model_providers.scripted]', 'name = "scripted"', `base_url = "${server.url}/v1"`, 'wire_api = "responses"', 'env_key = "OPENAI_API_KEY"', '',
  ].join('\n'));
  const { SUPABASE_URL: _u, SUPABASE_ANON_KEY: _a, SUPABASE_PUBLISHABLE_KEY: _p, SUPABASE_SECRET_KEY: _s, SUPABASE_SERVICE_ROLE_KEY: _r, BATON_AGENT_TOKEN: _t, ...rest } = process.env;
  env = {
    ...rest, HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH}`,
    ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted',
    OPENAI_API_KEY: 'sk-scripted',
    GEMINI_API_KEY: 'scripted', GOOGLE_GEMINI_BASE_URL: server.url,
  };
});

afterAll(async () => {
  for (const pid of daemonsUnder(dir)) { try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } }
  for (let i = 0; i < 100 && daemonsUnder(dir).length; i++) await new Promise((r) => setTimeout(r, 100));
  for (const pid of daemonsUnder(dir)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  await server?.close();
  if (dir) {
    await bash('baton stack stop || true', dir);
    removeStackFolder(dir);
  }
});

describe('docs/coding-agents.md', () => {
  it('has the steps the test follows', () => {
    expect(shellBlocks).toHaveLength(5);
    expect(jsonFiles.map(([file]) => file)).toEqual(['writer/baton.agent.json', 'reviewer/baton.agent.json', 'tester/baton.agent.json']);
    expect(shellBlocks[0]).toMatch(/^npm install --global @anthropic-ai\/claude-code @openai\/codex @google\/gemini-cli\n$/);
  });

  it('hands work from Claude Code to Codex to Gemini CLI, and shows what came back and what it cost', async () => {
    const [, setUp, start, handOn, read] = shellBlocks as [string, string, string, string, string];
    const made = await bash(setUp, dir);
    expect(made.code, made.out).toBe(0);
    for (const [file, text] of jsonFiles) fs.writeFileSync(path.join(dir, file), text);
    const started = await bash(start, dir);
    expect(started.code, started.out).toBe(0);
    // Steps 4 and 5 in one shell, as a person types them in one terminal.
    const ran = await bash(`${handOn}\n${read}`, dir);
    const logs = () => ['writer', 'reviewer', 'tester'].map((d) => fs.readFileSync(path.join(dir, d, 'daemon.log'), 'utf8').slice(-3000)).join('\n');
    if (process.env.BATON_GUIDE_DEBUG) console.log(ran.out, logs());
    expect(ran.code, `${ran.out}\n${logs()}`).toBe(0);
    expect(ran.stdout).toContain('print("hello")');
    expect(ran.stdout).toMatch(/It prints: hello/);
    expect(ran.stdout).toMatch(/Spent by the chain under this task[\s\S]*claude-[\s\S]*gemini-[\s\S]*gpt-5\.1-codex/);
  }, 300_000);
});
