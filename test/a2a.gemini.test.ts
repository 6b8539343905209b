/**
 * The daemon's `a2a` executor against an A2A 0.3 agent from the wild: Gemini CLI's own A2A server
 * (`@google/gemini-cli-a2a-server` from npm, installed once into a cache by
 * scripts/coding-agents-runtime.mjs), which runs its own agent loop against a scripted model, the one
 * double. A Baton task goes to it and its answer comes back as the result; its question comes back as
 * a Baton question, and the answer goes on in the same remote task.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentFile } from '../src/agent/options.js';
import type { Task } from '../src/schemas.js';
import { freePort } from '../src/stack/ports.js';
// @ts-expect-error: a plain JS script
import { ensureGeminiA2AServer } from '../scripts/coding-agents-runtime.mjs';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent } from './helpers.js';
import { startModelServer, type ModelServer, type Reply, type Turn } from './model-server.js';
import { stopProcess } from './openclaw-gateway.js';

const { server: serverScript } = ensureGeminiA2AServer({ log: () => undefined }) as { server: string };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-gemini-a2a-'));
let model: ModelServer;
let agent: ChildProcess | undefined;
let url = '';

/** The remote agent's model: answers the work, or asks first and then answers with what it was told. */
function script(turn: Turn): Reply {
  const users = turn.entries.filter((e) => e.role === 'user').map((e) => e.text).join('\n');
  if (process.env.BATON_A2A_TRACE) fs.appendFileSync(process.env.BATON_A2A_TRACE, `${JSON.stringify(turn.entries.slice(-3)).slice(0, 1500)}\n`);
  if (users.includes('Review hello.py')) return { text: 'hello.py prints hello, as it should.' };
  if (users.includes('Translate the greeting')) {
    const told = /\b(French|German|Spanish)\b/.exec(turn.entries.filter((e) => e.role === 'user').at(-1)?.text ?? '');
    return told ? { text: `Bonjour (in ${told[1]})` } : { text: 'Which language should I translate it into?' };
  }
  return { text: 'nothing to do' };
}

beforeAll(async () => {
  model = await startModelServer(script);
  const port = await freePort();
  const workspace = path.join(scratch, 'workspace');
  fs.mkdirSync(workspace);
  agent = spawn(process.execPath, [serverScript], {
    cwd: workspace,
    env: {
      PATH: process.env.PATH, HOME: scratch, TMPDIR: os.tmpdir(),
      GEMINI_API_KEY: 'scripted', GOOGLE_GEMINI_BASE_URL: model.url,
      CODER_AGENT_PORT: String(port), CODER_AGENT_WORKSPACE_PATH: workspace,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let said = '';
  agent.stdout!.on('data', (c: Buffer) => { said += c; });
  agent.stderr!.on('data', (c: Buffer) => { said += c; });
  url = `http://127.0.0.1:${port}/`;
  await eventually(async () => fetch(`${url}.well-known/agent-card.json`).then((r) => r.ok, () => false), 60_000, `Gemini CLI's A2A server to start: ${said.slice(-2000)}`);
}, 120_000);

afterAll(async () => {
  if (agent) await stopProcess(agent);
  await model?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A daemon whose executor is the config file's, as people write it: the remote agent's URL and what its input-required means. */
async function forwarder(inputRequired?: 'question' | 'result') {
  const dir = fs.mkdtempSync(path.join(scratch, 'agent-'));
  const file = path.join(dir, 'baton.agent.json');
  fs.writeFileSync(file, JSON.stringify({ executors: { '*': { a2a: url, ...(inputRequired ? { inputRequired } : {}) } } }));
  const { executors } = await loadAgentFile(file);
  const worker = await newAgent('gemini-a2a');
  await daemon(worker, { executors });
  return worker;
}

const final = (t: Task) => ['completed', 'failed', 'rejected', 'cancelled'].includes(t.status);

describe('the a2a executor and an A2A 0.3 agent (Gemini CLI\'s A2A server)', () => {
  it('reads its 0.3 card and hands it the work; with inputRequired "result", its turn\'s words are the result', async () => {
    const card = await fetch(`${url}.well-known/agent-card.json`).then((r) => r.json()) as { protocolVersion: string };
    expect(card.protocolVersion).toBe('0.3.0');
    const worker = await forwarder('result');
    const sender = await newAgent('gemini-a2a-sender');
    const task = await sender.client.handoff({ to: worker.id, title: 'Review hello.py', description: 'Does it print hello?' });
    const done = await eventually(async () => { const t = await sender.client.getTask(task.id); return final(t) ? t : undefined; }, 120_000, 'the task to end');
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.result?.summary).toBe('hello.py prints hello, as it should.');
    expect(done.result?.remote_task).toMatch(/^[0-9a-f-]{36}$/);
  }, 180_000);

  it('by default puts its input-required words to the sender as a question, and the answer goes on in the same remote task', async () => {
    const worker = await forwarder();
    const sender = await newAgent('gemini-a2a-asker');
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate the greeting' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'input_required', 120_000, 'the question');
    const [question] = await sender.client.messages({ taskId: task.id, kind: 'question' });
    expect(JSON.stringify(question?.body)).toContain('Which language should I translate it into?');
    await sender.client.answer(task.id, 'French');
    // Its next turn answers, and ends input-required too: a second question, with what it said.
    await eventually(async () => (await sender.client.messages({ taskId: task.id, kind: 'question' })).length === 2, 120_000, 'the next turn');
    const asked = await sender.client.messages({ taskId: task.id, kind: 'question' });
    expect(asked.map((m) => JSON.stringify(m.body)).join('\n')).toContain('Bonjour (in French)');
    // The model saw the first turn in the second: the same remote task and its history.
    const second = model.turns.filter((t) => t.all.includes('Translate the greeting') && t.all.includes('French')).at(-1)!;
    expect(second.all).toContain('Which language should I translate it into?');
    await sender.client.cancel(task.id, 'enough');
    expect((await sender.client.getTask(task.id)).status).toBe('cancelled');
  }, 180_000);
});
