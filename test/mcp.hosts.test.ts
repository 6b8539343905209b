/**
 * docs/mcp.md's "In Claude Code, Codex and Gemini CLI" followed as written: each real CLI from npm
 * (the suite's cache, scripts/coding-agents-runtime.mjs) registers `baton mcp` with its own `mcp add`,
 * and a run of it hands work to another agent through Baton's tools and reads the result. The one
 * double is the model, a scripted server that calls `handoff`, then `wait_for` until the task ends, and
 * says what came back; a daemon of the receiving agent does the work.
 *
 * The page's agent ids (`lead`, `reviewer`) are made unique per test, as every id in the suite is.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JS script
import { ensureCodingAgents } from '../scripts/coding-agents-runtime.mjs';
import { cliPath } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack, uniqueId } from './helpers.js';
import { agentKeyEnv, operatorEnv } from './keys-mode.js';
import { startModelServer, type ModelServer, type Reply, type Turn } from './model-server.js';
import { runBlock } from './shell.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../src/stack/ports.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const page = fs.readFileSync(path.join(root, 'docs', 'mcp.md'), 'utf8');
const section = page.slice(page.indexOf('## In Claude Code, Codex and Gemini CLI'), page.indexOf('## Over HTTP, from another machine'));
const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
const overHttp = page.slice(page.indexOf('## Over HTTP, from another machine'), page.indexOf('## Long hand-offs as MCP tasks'));
const httpBlocks = [...overHttp.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

const paths = ensureCodingAgents({ log: () => undefined }) as { claude: string; codex: string; gemini: string };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-hosts-'));
let server: ModelServer;

const shells = { anthropic: 'Bash', openai: 'exec_command', gemini: 'run_shell_command' } as const;
const shellInput = (turn: Turn, command: string) => (turn.api === 'anthropic' ? { command, description: 'run it' } : turn.api === 'openai' ? { cmd: command } : { command });

/** The host's model with the skill: load it as the host offers it, then hand off, wait and read with `baton` in the shell. */
function withSkill(turn: Turn): Reply {
  const to = /Use Baton to hand the review of hello\.py to (\S+), and/.exec(turn.all)![1];
  const calls = turn.entries.filter((e) => e.role === 'assistant' && e.tool);
  // What the tools printed, with the JSON escaping a host wraps it in (Gemini CLI: twice) undone.
  let outputs = turn.entries.filter((e) => e.role === 'tool').map((e) => e.text).join('\n');
  for (let i = 0; i < 3; i++) outputs = outputs.replace(/\\+"/g, '"').replace(/\\+n/g, '\n');
  const run = (command: string): Reply => ({ tool: shells[turn.api], input: shellInput(turn, command) });
  // The skill's body, as the host hands it back (a tool's output, or a message of its own).
  if (!turn.entries.some((e) => e.role !== 'assistant' && e.text.includes('# Baton: hand work between agents'))) {
    if (calls.length) return { text: `the skill did not load: ${outputs.slice(0, 300)}` };
    // Claude Code: the Skill tool; Gemini CLI: activate_skill; Codex: the file its instructions name.
    if (turn.tools.includes('Skill') && /- baton: Hand work to other AI agents/.test(turn.all)) return { tool: 'Skill', input: { skill: 'baton' } };
    if (turn.tools.includes('activate_skill')) return { tool: 'activate_skill', input: { name: 'baton' } };
    // Codex lists it as `baton: … (file: r0/baton/SKILL.md)`, with `r0` in a table of skill roots.
    const listed = /- baton: [^\n]*\(file: (r\d+)\/baton\/SKILL\.md\)/.exec(turn.all);
    const root = listed && new RegExp(`\`${listed[1]}\` = \`([^\`]+)\``).exec(turn.all)?.[1];
    return root ? run(`cat ${root}/baton/SKILL.md`) : { text: 'no Baton skill offered' };
  }
  const task = /"id":\s*"([0-9a-f-]{36})"/.exec(outputs)?.[1];
  if (!task) return run(`baton handoff ${to} "Review hello.py" -d "Does it print hello?" --json`);
  const shell = calls.filter((c) => c.tool === shells[turn.api]).map((c) => c.text);
  if (shell.length > 5) return { text: `gave up: ${outputs.slice(-300)}` };
  if (!shell.some((c) => c.includes('baton watch'))) return run(`baton watch --task ${task}`);
  if (!shell.some((c) => c.includes('baton show'))) return run(`baton show ${task}`);
  return { text: `The reviewer said: ${/hello\.py prints hello[^\n"]*/.exec(outputs)?.[0] ?? outputs.slice(-300)}` };
}

/** The host's model: hand off, wait until the task ends, say the result. */
function script(turn: Turn): Reply {
  if (process.env.BATON_HOSTS_TRACE) fs.appendFileSync(process.env.BATON_HOSTS_TRACE, `${JSON.stringify(turn.entries.slice(-2)).slice(0, 1500)}\n`);
  if (turn.all.includes('Use Baton to hand the review')) return withSkill(turn);
  const handoff = turn.tools.find((t) => /(^|_)handoff$/.test(t));
  const waitFor = turn.tools.find((t) => /(^|_)wait_for$/.test(t));
  const to = /Hand the review of hello\.py to (\S+), wait/.exec(turn.all)?.[1];
  // Claude Code offers an MCP server's tools by name only, to load with its ToolSearch first.
  const deferred = ['handoff', 'wait_for'].map((t) => `mcp__baton__${t}`);
  if ((!handoff || !waitFor) && turn.tools.includes('ToolSearch') && deferred.every((t) => turn.all.includes(t))) {
    return { tool: 'ToolSearch', input: { query: `select:${deferred.join(',')}`, max_results: 5 } };
  }
  if (!handoff || !waitFor || !to) return { text: `no Baton tools offered (${turn.tools.join(', ')})` };
  const called = turn.entries.filter((e) => e.role === 'assistant' && e.tool && /(^|_)(handoff|wait_for)$/.test(e.tool));
  const last = turn.entries.filter((e) => e.role === 'tool').at(-1)?.text ?? '';
  if (!called.length) return { tool: handoff, input: { to, title: 'Review hello.py', description: 'Does it print hello?' } };
  const task = /\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/.exec(turn.entries.filter((e) => e.role === 'tool').map((e) => e.text).join('\n'))?.[1];
  if (!task) return { text: `the hand-off said: ${last}` };
  // Claude Code in a terminal follows wait_for as an MCP task (2026-07-28's extension) in the background,
  // and tells the model its end in a task notification, with the result.
  const told = turn.entries.at(-1)?.role === 'user' ? /<task-notification>[\s\S]*<status>completed<\/status>[\s\S]*"summary":"([^"]*)"/.exec(turn.entries.at(-1)!.text) : null;
  if (told) return { text: `The reviewer said: ${told[1]}` };
  if (/started server-side task/.test(last)) return { text: 'The reviewer has it; I will say what it said when the task ends.' };
  if (called.length === 1 || /Still open/.test(last)) return { tool: waitFor, input: { task, timeout_seconds: 30 } };
  // The result as the host gives it back: the tool's text, or (Claude Code) its structured content.
  const summary = /"summary":"([^"]*)"/.exec(last)?.[1] ?? /completed: [^\n\\]*(?:\\n|\n)([^\n\\<]*)/.exec(last)?.[1];
  return { text: `The reviewer said: ${summary ?? last}` };
}

beforeAll(async () => {
  server = await startModelServer(script);
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A person's machine: a home of its own, `baton` and the three CLIs on the PATH, the model's settings. */
function machine(host: string) {
  const home = path.join(scratch, `${host}-home`);
  const bin = path.join(home, '.bin');
  fs.mkdirSync(bin, { recursive: true });
  // Baton as installed; what `baton mcp` logs (the host it met) is kept, as the host may not show it.
  // Its server slow to start, as on a busy machine (where a host that did not wait for it once began
  // without Baton's tools): the page's commands make each host wait.
  fs.writeFileSync(path.join(bin, 'baton'), `#!/bin/sh\n[ "$1" = mcp ] && sleep 3\nLOG_LEVEL=info exec ${JSON.stringify(process.execPath)} ${JSON.stringify(cliPath)} "$@" 2>>${JSON.stringify(path.join(home, 'baton.log'))}\n`, { mode: 0o755 });
  for (const cli of ['claude', 'codex', 'gemini'] as const) fs.symlinkSync(paths[cli], path.join(bin, cli));
  // No login profile: the skill's block puts baton on the PATH of login shells (Codex runs its commands
  // in one, and Debian's /etc/profile sets root's PATH anew), as docs/mcp.md says.
  // Each CLI signed in to its provider as its user would be (here: the scripted model).
  fs.mkdirSync(path.join(home, '.codex'));
  fs.writeFileSync(path.join(home, '.codex', 'config.toml'), [
    'model = "gpt-5.1-codex"', 'model_provider = "scripted"', 'approval_policy = "never"', '',
    '[model_providers.scripted]', 'name = "scripted"', `base_url = "${server.url}/v1"`, 'wire_api = "responses"', 'env_key = "OPENAI_API_KEY"', '',
  ].join('\n'));
  fs.mkdirSync(path.join(home, '.gemini'));
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }));
  // The folder it runs in trusted, as its user does once when asked.
  fs.writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [home]: 'TRUST_FOLDER' }));
  const base = { HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH}`, NO_COLOR: '1', TMPDIR: os.tmpdir() };
  return {
    home,
    /** Where the operator's settings are: the service key, to create the agent. */
    operator: { ...base, SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), ...operatorEnv(stack) },
    /** The agent's machine: no Baton settings but the file the host names. */
    person: {
      ...base,
      ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1',
      OPENAI_API_KEY: 'sk-scripted',
      GEMINI_API_KEY: 'scripted', GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_CLI_NO_RELAUNCH: 'true',
    },
  };
}

describe('docs/mcp.md: baton mcp in the coding agents', () => {
  it('has the blocks the test follows', () => {
    expect(blocks).toHaveLength(8);
    expect(blocks[4]).toMatch(/^baton skill install --claude --codex --gemini\n/);
    expect(blocks[4]).toMatch(/>> ~\/\.profile\n?$/);
    expect(blocks.slice(5).map((b) => b.split(' ')[0])).toEqual(['claude', 'codex', 'gemini']);
    expect(blocks[0]).toMatch(/--write-env ~\/\.baton\/lead\.env/);
    expect(blocks.slice(1, 4).map((b) => b.split(' ')[0])).toEqual(['claude', 'codex', 'gemini']);
    expect(blocks[1]).toMatch(/^MCP_CONNECTION_NONBLOCKING=false claude -p /m);
  });

  it.each([['claude', 1], ['codex', 2], ['gemini', 3]] as const)('%s hands work on through baton mcp, waits for it, and reads the result', async (host, index) => {
    const lead = uniqueId('lead');
    const reviewer = await newAgent('reviewer');
    await daemon(reviewer, { executors: { '*': () => 'hello.py prints hello, as it should' } });
    const { home, operator, person } = machine(host);
    const ids = (block: string) => block.replace(/\blead\b/g, lead).replace(/\breviewer\b/g, reviewer.id);

    const created = await runBlock(ids(blocks[0]!), operator, home);
    expect(created.code, created.out).toBe(0);
    expect(fs.statSync(path.join(home, '.baton', `${lead}.env`)).mode & 0o077).toBe(0);

    const ran = await runBlock(ids(blocks[index]!), person, home);
    if (process.env.BATON_HOSTS_DEBUG) console.log(ran.out, JSON.stringify(server.turns.slice(-3).map((t) => ({ tools: t.tools, entries: t.entries.slice(-3) })), null, 1));
    expect(ran.code, ran.out).toBe(0);
    expect(ran.stdout).toContain('The reviewer said: hello.py prints hello, as it should');
    // The hand-off is Baton's: sent by the lead, done by the reviewer.
    // What the host said of itself when it connected (baton mcp logs it), for docs/mcp.md's table.
    const met = fs.readFileSync(path.join(home, 'baton.log'), 'utf8').split('\n').filter((l) => l.includes('host connected')).map((l) => JSON.parse(l));
    expect(met.length).toBeGreaterThan(0);
    const row = section.split('\n').find((l) => l.startsWith(`| ${met[0].host.title ?? 'Gemini CLI'} ${met[0].host.version} |`))?.split(' | ');
    expect(row, `docs/mcp.md's table has no row for ${JSON.stringify(met[0].host)}`).toBeTruthy();
    expect(row![1]).toBe(met[0].protocol);
    // MCP tasks: 2025-11-25's capability, or 2026-07-28's extension, declared by the host.
    expect(row![3]).toMatch(met[0].capabilities.tasks || met[0].capabilities.extensions?.['io.modelcontextprotocol/tasks'] ? /^yes/ : /^no/);
    expect(row![4] === 'no').toBe(!met[0].capabilities.elicitation);
    const done = await reviewer.client.listTasks({ box: 'mine', status: ['completed'] });
    expect(done.map((t) => t.from_agent)).toEqual([lead]);
    // The host's own configuration names the settings file, not the token.
    const token = /BATON_AGENT_TOKEN=(\S+)/.exec(fs.readFileSync(path.join(home, '.baton', `${lead}.env`), 'utf8'))?.[1];
    expect(token).toBeTruthy();
    const configs = ['.claude.json', '.codex/config.toml', '.gemini/settings.json'].map((f) => path.join(home, f)).filter((f) => fs.existsSync(f));
    for (const file of configs) expect(fs.readFileSync(file, 'utf8')).not.toContain(token!);
  }, 240_000);

  it.each([['claude', 5], ['codex', 6], ['gemini', 7]] as const)('%s loads the Baton skill, hands work on with baton in its shell, and reads the result', async (host, index) => {
    const lead = uniqueId('lead');
    const reviewer = await newAgent('reviewer');
    await daemon(reviewer, { executors: { '*': () => 'hello.py prints hello, as it should' } });
    const { home, operator, person } = machine(`${host}-skill`);
    const ids = (block: string) => block.replace(/\blead\b/g, lead).replace(/\breviewer\b/g, reviewer.id);
    const created = await runBlock(ids(blocks[0]!), operator, home);
    expect(created.code, created.out).toBe(0);

    // Installed, and the install block and the host's run in one shell, as a person types them.
    const ran = await runBlock(`${ids(blocks[4]!)}\n${ids(blocks[index]!)}`, person, home);
    if (process.env.BATON_HOSTS_DEBUG) console.log(ran.out, JSON.stringify(server.turns.slice(-2).map((t) => ({ tools: t.tools, system: t.system.slice(0, Number(process.env.BATON_HOSTS_DEBUG_CHARS ?? 3000)), entries: t.entries.slice(-3) })), null, 1));
    expect(ran.code, ran.out).toBe(0);
    expect(ran.stdout).toContain('The reviewer said: hello.py prints hello, as it should');
    const done = await reviewer.client.listTasks({ box: 'mine', status: ['completed'] });
    expect(done.map((t) => t.from_agent)).toEqual([lead]);
  }, 240_000);
});

describe('docs/mcp.md: baton mcp over HTTP in Claude Code and Codex', () => {
  const servers: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.filter((s) => s.exitCode === null).map((s) => {
      const exited = new Promise((resolve) => s.once('exit', resolve));
      s.kill('SIGTERM');
      return exited;
    }));
  });

  /** The server, as the page starts it, on a port of the test's own: the project's settings, no token. What it says, as it goes. */
  async function serve(): Promise<{ port: number; said: () => string }> {
    const port = await freePort();
    let said = '';
    const [command, ...args] = httpBlocks[0]!.trim().replace('8765', String(port)).split(' ');
    expect(command).toBe('baton');
    const server = spawn(process.execPath, [cliPath, ...args], { env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), LOG_LEVEL: 'info' } });
    servers.push(server);
    server.stdout!.on('data', (c: Buffer) => { said += c; });
    server.stderr!.on('data', (c: Buffer) => { said += c; });
    const deadline = Date.now() + 30_000;
    while (!said.includes(`http://127.0.0.1:${port}/mcp`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(said).toContain(`http://127.0.0.1:${port}/mcp`);
    return { port, said: () => said };
  }

  it('has the blocks the tests follow', () => {
    expect(httpBlocks).toHaveLength(4);
    expect(httpBlocks[0]!.trim()).toBe('baton mcp --http 8765');
    expect(httpBlocks[1]).toMatch(/claude mcp add-json .*headersHelper/);
    expect(httpBlocks[2]).toMatch(/^codex mcp add baton --url http:\/\/127\.0\.0\.1:8765\/mcp --bearer-token-env-var BATON_AGENT_TOKEN\n/);
    expect(httpBlocks[3]).toMatch(/^gemini mcp add .*--transport http -H 'Authorization: Bearer \$BATON_AGENT_TOKEN' baton http:\/\/127\.0\.0\.1:8765\/mcp\n/);
  });

  it.each([['claude', 1], ['codex', 2], ['gemini', 3]] as const)('%s hands work on through baton mcp --http, the token from the settings file', async (host, index) => {
    const lead = uniqueId('lead');
    const reviewer = await newAgent('reviewer');
    await daemon(reviewer, { executors: { '*': () => 'hello.py prints hello, as it should' } });
    const { home, operator, person } = machine(`${host}-http`);
    const ids = (block: string) => block.replace(/\blead\b/g, lead).replace(/\breviewer\b/g, reviewer.id);
    const created = await runBlock(ids(blocks[0]!), operator, home);
    expect(created.code, created.out).toBe(0);
    const { port, said } = await serve();

    const ran = await runBlock(ids(httpBlocks[index]!).replaceAll('8765', String(port)), person, home);
    if (process.env.BATON_HOSTS_DEBUG) console.log(ran.out, said());
    expect(ran.code, ran.out).toBe(0);
    expect(ran.stdout).toContain('The reviewer said: hello.py prints hello, as it should');
    const done = await reviewer.client.listTasks({ box: 'mine', status: ['completed'] });
    expect(done.map((t) => t.from_agent)).toEqual([lead]);
    // The session (2025) or the stateless requests (2026-07-28) were the lead's, and the host's configuration holds no token.
    expect(said()).toMatch(new RegExp(`"agent":"${lead}"[^\\n]*(MCP session opened over HTTP|host connected)`));
    const token = /BATON_AGENT_TOKEN=(\S+)/.exec(fs.readFileSync(path.join(home, '.baton', `${lead}.env`), 'utf8'))?.[1];
    const configuration = { claude: path.join(home, '.claude.json'), codex: path.join(home, '.codex', 'config.toml'), gemini: path.join(home, '.gemini', 'settings.json') }[host];
    expect(fs.readFileSync(configuration, 'utf8')).not.toContain(token!);
    // What the host said of itself when it connected, for docs/mcp.md's paragraph.
    const met = said().split('\n').filter((l) => l.includes('host connected')).map((l) => JSON.parse(l));
    expect(met.map((m) => m.protocol)).toContain(host === 'claude' ? '2026-07-28' : '2025-06-18');
  }, 240_000);
});

describe('docs/mcp.md: Claude Code in a person\'s terminal follows a hand-off as an MCP task', () => {
  it('declares the 2026-07-28 tasks extension, takes wait_for as a background task, and is told its result when it ends', async () => {
    const lead = uniqueId('lead');
    const reviewer = await newAgent('reviewer');
    // Long enough that the wait outlives the call: the host follows the task, not the model.
    await daemon(reviewer, { executors: { '*': async () => { await new Promise((resolve) => setTimeout(resolve, 5000)); return 'hello.py prints hello, as it should'; } } });
    const { home, operator, person } = machine('claude-terminal');
    const ids = (block: string) => block.replace(/\blead\b/g, lead).replace(/\breviewer\b/g, reviewer.id);
    expect((await runBlock(ids(blocks[0]!), operator, home)).code).toBe(0);
    // The page's `claude mcp add`, then the person's first run of it, its first-run questions answered
    // as a person answers them once (theme, this folder trusted, the key theirs).
    const added = await runBlock(ids(blocks[1]!).split('\n')[0]!, person, home);
    expect(added.code, added.out).toBe(0);
    const settings = path.join(home, '.claude.json');
    fs.writeFileSync(settings, JSON.stringify({
      ...JSON.parse(fs.readFileSync(settings, 'utf8')), hasCompletedOnboarding: true, theme: 'dark',
      customApiKeyResponses: { approved: ['sk-scripted'], rejected: [] }, projects: { [home]: { hasTrustDialogAccepted: true } },
    }));
    const log = path.join(home, 'baton.log');
    const said = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');
    const session = `baton-${lead}`;
    const tmux = (...args: string[]) => execFileSync('tmux', args).toString();
    const env = Object.entries(person).map(([k, v]) => `${k}=${JSON.stringify(String(v))}`).join(' ');
    tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', '-c', home, `env ${env} claude --allowedTools mcp__baton`);
    try {
      // Typed once Baton's server is up in the session, as a person types it.
      await eventually(async () => said().includes('push is up'), 60_000, 'baton mcp connected in the session');
      await eventually(async () => tmux('capture-pane', '-p', '-t', session).includes('❯'), 30_000, 'the prompt');
      const prompt = `Hand the review of hello.py to ${reviewer.id}, wait for it, and tell me what it said`;
      tmux('send-keys', '-t', session, '-l', prompt);
      await eventually(async () => tmux('capture-pane', '-p', '-t', session).includes(prompt), 30_000, 'the prompt typed');
      tmux('send-keys', '-t', session, 'Enter');
      await eventually(async () => tmux('capture-pane', '-p', '-t', session).includes('The reviewer said: hello.py prints hello, as it should'), 120_000, 'the result told in the session');
      // wait_for answered with a task, which Claude Code followed (tasks/get) to its end.
      expect(tmux('capture-pane', '-p', '-t', session)).toMatch(/MCP task [0-9a-f-]{36} \(baton\/wait_for\) completed/);
      expect(server.turns.some((t) => t.entries.some((e) => e.role === 'tool' && /started server-side task/.test(e.text)))).toBe(true);
    } finally {
      if (process.env.BATON_HOSTS_DEBUG) console.log(tmux('capture-pane', '-p', '-t', session));
      tmux('kill-session', '-t', session);
    }
    const met = said().split('\n').filter((l) => l.includes('host connected')).map((l) => JSON.parse(l));
    expect(met[0]).toMatchObject({ protocol: '2026-07-28', host: { title: 'Claude Code' }, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    const done = await reviewer.client.listTasks({ box: 'mine', status: ['completed'] });
    expect(done.map((t) => t.from_agent)).toEqual([lead]);
  }, 240_000);
});
