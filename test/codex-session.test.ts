/**
 * Work into a person's running Codex session: the real Codex 0.171's app server (`codex app-server
 * --listen unix://…`), a person's client in it (their thread, as `codex --remote` holds it), and a real
 * daemon whose `codex-session` executor hands each task into that thread as a new turn. The one double
 * is the model, a scripted server.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batonCommand, loadAgentFile } from '../src/agent/options.js';
import type { Handler } from '../src/contract.js';
import { codexSession, codexSessionTeller } from '../src/runtimes/codex-session.js';
import type { Task } from '../src/schemas.js';
// @ts-expect-error: a plain JS script
import { ensureCodingAgents } from '../scripts/coding-agents-runtime.mjs';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, type TestAgent } from './helpers.js';
import { startModelServer, type ModelServer, type Turn, type Usage } from './model-server.js';

const paths = ensureCodingAgents({ log: () => undefined }) as { codex: string };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-codex-session-'));
const socket = path.join(scratch, 'app.sock');

/** What the model "spent" per Baton task, to compare with what Baton recorded. */
const spentByTask = new Map<string, Usage>();
const taskOf = (turn: Turn) => /Baton task ([0-9a-f-]{36})/.exec(turn.last.text)?.[1];
/** Replies the test holds back until it lets them go (a turn that takes as long as the test says). */
const held = new Map<string, () => void>();
const hold = (marker: string) => new Promise<void>((resolve) => held.set(marker, resolve));

let server: ModelServer;
let app: ChildProcess;
const codexEnv = () => ({ ...process.env, CODEX_HOME: path.join(scratch, 'codex-home'), OPENAI_API_KEY: 'sk-scripted' });
/** The person's terminal: a tmux server of this test's own. */
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', `baton-codex-session-${process.pid}`, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-J', '-t', 'person');

/** A client of the app server, as the person's terminal is: their thread, and everything said in it. */
async function personClient() {
  const ws = new WebSocket(`ws+unix://${socket}:/`);
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const heard: Array<{ method: string; params: any }> = [];
  const waiting = new Map<number, (m: any) => void>();
  let next = 0;
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.method) heard.push(m);
    else waiting.get(m.id)?.(m);
  });
  const request = (method: string, params: unknown) => new Promise<any>((resolve) => {
    next += 1;
    waiting.set(next, resolve);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: next, method, params }));
  });
  await request('initialize', { clientInfo: { name: 'person', title: null, version: '1' }, capabilities: null });
  ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'initialized' }));
  const { result } = await request('thread/start', { cwd: scratch });
  const threadId: string = result.thread.id;
  const turnsEnded = () => heard.filter((m) => m.method === 'turn/completed' && m.params.threadId === threadId);
  /** The person types into their session, and waits for the turn to end. */
  const say = async (text: string) => {
    const ended = turnsEnded().length;
    await request('turn/start', { threadId, input: [{ type: 'text', text, text_elements: [] }] });
    return eventually(async () => turnsEnded()[ended], 60_000, 'the person\'s turn to end');
  };
  return { threadId, heard, say, turnsEnded, close: () => ws.close() };
}

beforeAll(async () => {
  server = await startModelServer(async (turn) => {
    const marker = /\[hold:([a-z0-9]+)\]/.exec(turn.last.text)?.[1];
    if (marker) await hold(marker);
    if (turn.last.text.includes('[fail:500]')) return { status: 500, error: 'the provider fell over' };
    const task = taskOf(turn);
    return { text: task ? `Done in the session: ${/: (.*)$/m.exec(turn.last.text)?.[1]}` : `Hello, person (${turn.last.text.slice(0, 40)})` };
  }, {
    usage: (turn) => {
      const usage = { input: 120 + turn.entries.length, output: 17, cached: 30 };
      const task = taskOf(turn);
      if (task) {
        const had = spentByTask.get(task) ?? { input: 0, output: 0, cached: 0 };
        spentByTask.set(task, { input: had.input + usage.input, output: had.output + usage.output, cached: had.cached + usage.cached });
      }
      return usage;
    },
  });
  const home = path.join(scratch, 'codex-home');
  fs.mkdirSync(home);
  fs.writeFileSync(path.join(home, 'config.toml'), [
    'model = "gpt-5.1-codex"', 'model_provider = "scripted"', '',
    '[model_providers.scripted]', 'name = "scripted"', `base_url = "${server.url}/v1"`, 'wire_api = "responses"', 'env_key = "OPENAI_API_KEY"',
    'request_max_retries = 0', 'stream_max_retries = 0', '',
    // The folder trusted, as the person answered Codex once.
    `[projects."${scratch}"]`, 'trust_level = "trusted"', '',
  ].join('\n'));
  // The person's Codex, as they start it: an app server on a socket, which `codex --remote` attaches to.
  app = spawn(paths.codex, ['app-server', '--listen', `unix://${socket}`], {
    cwd: scratch, env: { ...codexEnv(), CODEX_HOME: home }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  await eventually(async () => fs.existsSync(socket) || undefined, 60_000, 'the app server to listen');
});

afterAll(async () => {
  try { tmux('kill-server'); } catch { /* never started, or already gone */ }
  for (const release of held.values()) release();
  if (app?.pid && app.exitCode === null && app.signalCode === null) {
    // Gone before its folder is removed: a dying app server still writes its session files there.
    const gone = new Promise((resolve) => app.once('exit', resolve));
    process.kill(app.pid);
    await gone;
  }
  await server?.close();
  fs.rmSync(scratch, { recursive: true, force: true, maxRetries: 5 });
});

async function worker(thread?: string): Promise<{ agent: TestAgent; lines: Array<Record<string, unknown>> }> {
  const agent = await newAgent('codex-session');
  const handler: Handler = await codexSession.executor({ 'codex-session': { url: `unix://${socket}`, thread, timeoutSeconds: 300 } },
    { file: path.join(scratch, 'baton.agent.json'), what: 'executor "session"', baton: batonCommand(), version: 'test' });
  const { lines } = await daemon(agent, { executors: { '*': handler } });
  return { agent, lines };
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const final = (t: Task) => ['completed', 'failed', 'rejected', 'cancelled'].includes(t.status);
const finished = (sender: TestAgent, id: string) =>
  eventually(async () => { const t = await sender.client.getTask(id); return final(t) ? t : undefined; }, 120_000, `task ${id} to finish`);
const userMessages = (heard: Array<{ method: string; params: any }>) => heard
  .filter((m) => m.method === 'item/completed' && m.params.item.type === 'userMessage')
  .map((m) => ({ turn: m.params.turnId as string, text: m.params.item.content.map((c: { text?: string }) => c.text ?? '').join('') }));

describe('codex-session: work into a person\'s running Codex session', () => {
  it('hands a task into the session a person watches with codex --remote, as a turn they see arrive; completes it with the reply, and records its spend', async () => {
    // The person attaches Codex's terminal to their app server and says good morning.
    tmux('new-session', '-d', '-s', 'person', '-x', '160', '-y', '50', '-c', scratch,
      `env CODEX_HOME=${shellQuote(codexEnv().CODEX_HOME)} OPENAI_API_KEY=sk-scripted ${shellQuote(paths.codex)} --remote ${shellQuote(`unix://${socket}`)}`);
    await eventually(async () => screen().includes('Ask Codex to do anything') || undefined, 60_000, 'Codex\'s terminal to start');
    tmux('send-keys', '-t', 'person', '-l', 'Good morning');
    await eventually(async () => screen().includes('Good morning') || undefined, 30_000, 'the words typed');
    tmux('send-keys', '-t', 'person', 'Enter');
    await eventually(async () => screen().includes('Hello, person') || undefined, 60_000, 'the model\'s answer in the terminal');

    // Baton's executor names no thread: the person's is the one session the app server has open.
    const { agent } = await worker();
    const sender = await newAgent('codex-session-sender');
    const task = await sender.client.handoff({ to: agent.id, title: 'Summarise the release notes' });
    const done = await finished(sender, task.id);
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ summary: 'Done in the session: Summarise the release notes' });
    // The person saw it arrive in their terminal, after their own words, and Codex's reply to it.
    const seen = await eventually(async () => (screen().includes('Done in the session: Summarise the release notes') ? screen() : undefined), 30_000, 'the task\'s turn on the screen');
    expect(seen.indexOf(`Baton task ${task.id} from ${sender.id}: Summarise the release notes`)).toBeGreaterThan(seen.indexOf('Good morning'));
    // What the turn spent, as the model reported it.
    const runs = await sender.client.runs(task.id);
    expect(runs.map((r) => r.runtime)).toEqual(['codex-session']);
    expect({ input: runs[0]!.input_tokens, output: runs[0]!.output_tokens, cached: runs[0]!.cached_tokens }).toEqual(spentByTask.get(task.id));
  }, 240_000);

  it('waits for the person\'s own turn to end before the task\'s turn starts', async () => {
    const person = await personClient();
    const { agent } = await worker(person.threadId);
    const talking = person.say('Think about this for a while [hold:person]');
    await eventually(async () => held.get('person'), 30_000, 'the person\'s turn to reach the model');
    const sender = await newAgent('codex-session-sender');
    const task = await sender.client.handoff({ to: agent.id, title: 'Check the build' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'in_progress' || undefined, 30_000, 'the task to start');
    // Still the person's turn alone: the task's waits.
    expect(userMessages(person.heard).map((m) => m.text)).toEqual(['Think about this for a while [hold:person]']);
    held.get('person')!();
    await talking;
    const done = await finished(sender, task.id);
    expect(done.status).toBe('completed');
    const said = userMessages(person.heard);
    expect(said).toHaveLength(2);
    expect(said[1]!.text).toContain(`Baton task ${task.id}`);
    expect(said[1]!.turn).not.toBe(said[0]!.turn);
    person.close();
  }, 240_000);

  it('interrupts the turn when the sender cancels the task', async () => {
    const person = await personClient();
    await person.say('Hi');
    const { agent } = await worker(person.threadId);
    const sender = await newAgent('codex-session-sender');
    const task = await sender.client.handoff({ to: agent.id, title: 'A long one [hold:cancel]' });
    await eventually(async () => held.get('cancel'), 60_000, 'the task\'s turn to reach the model');
    await sender.client.cancel(task.id, 'not needed after all');
    const ended = await eventually(async () => person.turnsEnded()[1], 60_000, 'the task\'s turn to end');
    expect(ended.params.turn.status).toBe('interrupted');
    expect((await sender.client.getTask(task.id)).status).toBe('cancelled');
    person.close();
  }, 240_000);

  it('tells the session of the agent that handed work over the worker\'s question and then the result, each as a turn', async () => {
    const person = await personClient();
    await person.say('I will hand the merge over');
    // The person's session is the sender's: its daemon tells it the news (tell: {"codex-session": …}).
    const sender = await newAgent('codex-session-sender');
    const teller = codexSessionTeller({ url: `unix://${socket}`, thread: person.threadId, timeoutSeconds: 300 }, 'test');
    await daemon(sender, { onResult: teller.onResult, onQuestion: teller.onQuestion });
    const workerAgent = await newAgent('codex-session-merger');
    await daemon(workerAgent, { executors: { '*': async (_task: Task, ctx: { ask(q: string): Promise<string> }) => `merged into ${await ctx.ask('Which branch?')}` } });
    const task = await sender.client.handoff({ to: workerAgent.id, title: 'Merge the fix' });

    const asked = await eventually(async () => userMessages(person.heard).find((m) => m.text.includes(`asks about Baton task ${task.id}`)), 60_000, 'the question in the session');
    expect(asked.text).toContain('Which branch?');
    expect(asked.text).toContain(`baton answer ${task.id}`);
    await sender.client.answer(task.id, 'main');
    const told = await eventually(async () => userMessages(person.heard).find((m) => m.text.includes(`Baton task ${task.id} "Merge the fix", which you handed over, is completed (by ${workerAgent.id})`)), 60_000, 'the result in the session');
    expect(told.text).toContain('merged into main');
    // Each news a turn of its own, after the person's, each ended.
    const turns = userMessages(person.heard).map((m) => m.turn);
    expect(new Set(turns).size).toBe(3);
    await eventually(async () => (person.turnsEnded().length === 3 ? true : undefined), 60_000, 'the news turns to end');
    person.close();
  }, 240_000);

  it('is read from baton.agent.json as an executor and as the teller, and refused with what to fix', async () => {
    const file = path.join(scratch, 'session.agent.json');
    const url = `unix://${socket}`;
    fs.writeFileSync(file, JSON.stringify({ executors: { '*': { 'codex-session': { url } } }, tell: { 'codex-session': { url, thread: 'any' } } }));
    const loaded = await loadAgentFile(file);
    expect(typeof loaded.executors?.['*']).toBe('function');
    expect(typeof loaded.onResult).toBe('function');
    fs.writeFileSync(file, JSON.stringify({ executors: { '*': { 'codex-session': { url: '/tmp/app.sock' } } } }));
    await expect(loadAgentFile(file)).rejects.toThrow(/unix:\/\/\/path\/to\/socket or ws:\/\/host:port/);
    fs.writeFileSync(file, JSON.stringify({ executors: { '*': { 'codex-session': { url, tokenEnv: 'BATON_TEST_UNSET_CODEX_TOKEN' } } } }));
    await expect(loadAgentFile(file)).rejects.toThrow(/BATON_TEST_UNSET_CODEX_TOKEN is set neither/);
  });

  it('fails the task with the turn\'s error when the model answers 500, and the session goes on', async () => {
    const person = await personClient();
    await person.say('Hello');
    const { agent } = await worker(person.threadId);
    const sender = await newAgent('codex-session-sender');
    const task = await sender.client.handoff({ to: agent.id, title: 'Doomed [fail:500]', maxAttempts: 1 });
    const done = await finished(sender, task.id);
    expect(done.status).toBe('failed');
    expect(done.status_reason).toMatch(/the Codex session's turn failed: /);
    expect(person.turnsEnded().map((m) => m.params.turn.status)).toEqual(['completed', 'failed']);
    // The next task goes into the same session as before.
    const next = await sender.client.handoff({ to: agent.id, title: 'After the failure' });
    expect((await finished(sender, next.id)).status).toBe('completed');
    person.close();
  }, 240_000);

  // Last in the file: it ends the app server the other tests share.
  it('hands the task back, neither failed nor counted, when the app server dies mid-turn', async () => {
    const person = await personClient();
    await person.say('Hello once more');
    const { agent } = await worker(person.threadId);
    const sender = await newAgent('codex-session-sender');
    const task = await sender.client.handoff({ to: agent.id, title: 'Cut short [hold:crash]', maxAttempts: 1 });
    await eventually(async () => held.get('crash'), 60_000, 'the task\'s turn to reach the model');
    const gone = new Promise((resolve) => app.once('exit', resolve));
    app.kill('SIGKILL');
    await gone;
    const handedBack = async () => (await sender.client.events(task.id)).filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending');
    const [first] = await eventually(async () => { const e = await handedBack(); return e.length > 0 && e; }, 60_000, 'the task to be handed back');
    expect(first!.note).toMatch(new RegExp(`^handed back: the Codex app server at unix://${socket.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (closed the connection|failed)`));
    // One attempt allowed, and none spent: a run cut short by the session's going away is no failure of the task.
    const now = await sender.client.getTask(task.id);
    expect(now.status).not.toBe('failed');
    expect(person.turnsEnded()).toHaveLength(1);
    person.close();
  }, 240_000);
});

