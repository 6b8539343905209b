/**
 * The daemon's `a2a` executor against a remote agent built with the official SDK's server (its
 * DefaultRequestHandler, task store and JSON-RPC transport): a task completes through it with its
 * progress and artifact, its input-required becomes a Baton question, a Baton cancellation reaches it,
 * and its failure fails the Baton task. The executor comes from an agent config file, as people write it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { A2A_PROTOCOL_VERSION, Role, TaskState, type AgentCard, type Message, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { a2aExecutor } from '../src/a2a/executor.js';
import { loadAgentFile } from '../src/agent/options.js';
import { freePort } from '../src/stack/ports.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, type TestAgent } from './helpers.js';

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const say = (taskId: string, contextId: string, value: string): Message => ({
  messageId: crypto.randomUUID(), taskId, contextId, role: Role.ROLE_AGENT, parts: [text(value)], metadata: {}, extensions: [], referenceTaskIds: [],
});

/** The remote agent: translates, asks which language, works until cancelled, or fails, by the words it is sent. */
class RemoteExecutor implements AgentExecutor {
  readonly cancelled = new Set<string>();
  readonly working = new Set<string>();
  /** Tasks waiting, mid-work, for the test to cut their stream, and those told to go on after it. */
  readonly cutting = new Set<string>();
  readonly resumed = new Set<string>();
  /** Tasks whose first event waits for the test's leave (the remote agent slow to name its task). */
  readonly naming = new Set<string>();
  readonly mayName = new Set<string>();
  /** The words of every execution, to count how often a piece of work was sent. */
  readonly executions: string[] = [];

  cancelTask = async (taskId: string): Promise<void> => {
    this.cancelled.add(taskId);
  };

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = request;
    const words = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    this.executions.push(words);
    const status = (state: TaskState, message?: string) => bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, metadata: {}, status: { state, timestamp: new Date().toISOString(), message: message ? say(taskId, contextId, message) : undefined },
    }));
    const artifact = (name: string, value: string) => bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: crypto.randomUUID(), name, description: '', parts: [text(value)], metadata: undefined, extensions: [] },
    }));
    if (words.includes('tardy')) {
      this.naming.add(taskId);
      await eventually(async () => this.mayName.has(taskId), 30_000, 'leave to name the task');
    }
    // Every execution opens with the task (the SDK's stream wants it first), new or resumed.
    bus.publish(AgentEvent.task(request.task ?? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined }, artifacts: [], history: [userMessage], metadata: {} }));
    if (request.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      status(TaskState.TASK_STATE_WORKING, `translating into ${words}`);
      artifact('translation.txt', `bonjour (${words})`);
      status(TaskState.TASK_STATE_COMPLETED, 'translated, as asked');
    } else if (words.includes('ask')) {
      status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which language?');
    } else if (words.includes('slow')) {
      this.working.add(taskId);
      status(TaskState.TASK_STATE_WORKING, 'working slowly');
      await eventually(async () => this.cancelled.has(taskId), 30_000, 'the cancellation');
      status(TaskState.TASK_STATE_CANCELED);
    } else if (words.includes('cut')) {
      this.cutting.add(taskId);
      status(TaskState.TASK_STATE_WORKING, 'working before the cut');
      await eventually(async () => this.resumed.has(taskId), 30_000, 'the connection to be cut');
      artifact('translation.txt', 'bonjour');
      status(TaskState.TASK_STATE_COMPLETED, 'translated after the cut');
    } else if (words.includes('fail')) {
      status(TaskState.TASK_STATE_FAILED, 'no dictionary here');
    } else {
      status(TaskState.TASK_STATE_WORKING, 'translating');
      artifact('translation.txt', 'bonjour');
      status(TaskState.TASK_STATE_COMPLETED, 'translated 1 word');
    }
    bus.finished();
  }
}

const remoteToken = crypto.randomBytes(16).toString('hex');
const remote = new RemoteExecutor();
let server: http.Server;
let url = '';
let worker: TestAgent;
let sender: TestAgent;
let executors: Awaited<ReturnType<typeof loadAgentFile>>['executors'];

beforeAll(async () => {
  const app = express();
  const card = (): AgentCard => ({
    name: 'Remote translator', description: 'An A2A agent outside Baton', version: '1.0.0', iconUrl: undefined, documentationUrl: undefined,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'translate', name: 'translate', description: 'Translates', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), remote);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card() }));
  // The remote agent asks for its own credentials: the executor sends them from the daemon's environment.
  app.use('/', (req, res, next) => (req.headers.authorization === `Bearer ${remoteToken}` ? next() : res.status(401).json({ error: 'no' })));
  app.use('/', express.json(), jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;

  [worker, sender] = await Promise.all([newAgent('a2a-forwarder', { capabilities: ['translate'] }), newAgent('a2a-asker')]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-a2a-exec-'));
  const file = path.join(dir, 'agent.json');
  fs.writeFileSync(file, JSON.stringify({ executors: { translate: { a2a: url, tokenEnv: 'BATON_TEST_REMOTE_TOKEN' } } }));
  process.env.BATON_TEST_REMOTE_TOKEN = remoteToken;
  ({ executors } = await loadAgentFile(file));
  fs.rmSync(dir, { recursive: true, force: true });
});
// The daemon helper stops its daemons after each test: each test runs the forwarder anew.
let forwarder: Awaited<ReturnType<typeof daemon>>;
beforeEach(async () => {
  forwarder = await daemon(worker, { executors });
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe('the a2a executor', () => {
  it('completes a task through the remote agent, with its progress and artifact', async () => {
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate hello', payload: { task_type: 'translate', text: 'hello' } });
    const done = await eventually(async () => { const t = await sender.client.getTask(task.id); return ['completed', 'failed'].includes(t.status) && t; });
    expect(done).toMatchObject({ status: 'completed', result: { status: 'success', summary: 'translated 1 word' } });
    expect((await worker.client.artifact(task.id, 'translation.txt')).text()).toBe('bonjour');
    const progress = await sender.client.messages({ taskId: task.id, kind: 'progress' });
    expect(progress.map((m) => (m.body as { text?: string }).text)).toContain('translating');
  });

  it('turns the remote agent\'s input-required into a question to the sender, and sends the answer back', async () => {
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate and ask', payload: { task_type: 'translate' } });
    const asking = await eventually(async () => { const t = await sender.client.getTask(task.id); return t.status === 'input_required' && t; });
    expect(asking.status_reason).toBe('Which language?');
    await sender.client.answer(task.id, 'French');
    const done = await eventually(async () => { const t = await sender.client.getTask(task.id); return t.status === 'completed' && t; });
    expect(done.result).toMatchObject({ summary: 'translated, as asked' });
    expect((await worker.client.artifact(task.id, 'translation.txt')).text()).toBe('bonjour (French)');
  });

  it('cancels the remote task when the Baton task is cancelled', async () => {
    const before = new Set(remote.working);
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate slowly', payload: { task_type: 'translate' } });
    const remoteId = await eventually(async () => [...remote.working].find((id) => !before.has(id)), 20_000, 'the remote task to start');
    await sender.client.cancel(task.id, 'changed my mind');
    await eventually(async () => remote.cancelled.has(remoteId), 30_000, 'the cancellation to reach the remote agent');
    expect((await sender.client.getTask(task.id)).status).toBe('cancelled');
  });

  it('cancels the remote task when the Baton task was cancelled before the remote agent named it', async () => {
    const before = new Set(remote.naming);
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate slowly, tardy to name it', payload: { task_type: 'translate' } });
    const remoteId = await eventually(async () => [...remote.naming].find((id) => !before.has(id)), 20_000, 'the remote task to start');
    await sender.client.cancel(task.id, 'changed my mind');
    await eventually(async () => forwarder.lines.some((l) => l.taskId === task.id && l.msg === 'claim no longer current; stopping its executor'),
      30_000, 'the forwarder to stop its executor');
    // Only now does the remote agent say which task it runs: it is told to cancel it all the same.
    remote.mayName.add(remoteId);
    await eventually(async () => remote.cancelled.has(remoteId), 30_000, 'the cancellation to reach the remote agent');
    expect((await sender.client.getTask(task.id)).status).toBe('cancelled');
  });

  it('reads the remote task to its end when the stream breaks off, and never sends the work again', async () => {
    const title = `Translate, cut ${crypto.randomUUID().slice(0, 8)}`;
    const before = new Set(remote.cutting);
    const task = await sender.client.handoff({ to: worker.id, title, payload: { task_type: 'translate' } });
    const remoteId = await eventually(async () => [...remote.cutting].find((id) => !before.has(id)), 20_000, 'the remote task to start');
    // Its progress reached Baton, so the executor knows the remote task: now the connection breaks off.
    await eventually(async () => (await sender.client.messages({ taskId: task.id, kind: 'progress' })).length > 0, 20_000, 'the progress');
    server.closeAllConnections();
    remote.resumed.add(remoteId);
    const done = await eventually(async () => { const t = await sender.client.getTask(task.id); return ['completed', 'failed'].includes(t.status) && t; });
    expect(done).toMatchObject({ status: 'completed', attempts: 1, result: { summary: 'translated after the cut', remote_task: remoteId } });
    expect((await worker.client.artifact(task.id, 'translation.txt')).text()).toBe('bonjour');
    expect(remote.executions.filter((words) => words.includes(title))).toHaveLength(1);
  });

  it('hands the task back, without counting an attempt, while nothing listens at the remote agent\'s URL', async () => {
    const lonely = await newAgent('a2a-lonely', { capabilities: ['nowhere'] });
    const closed = await freePort();
    const { instance } = await daemon(lonely, { executors: { nowhere: a2aExecutor({ url: `http://127.0.0.1:${closed}/` }) } });
    const task = await sender.client.handoff({ to: lonely.id, title: 'Nobody there', payload: { task_type: 'nowhere' }, maxAttempts: 1 });
    const handedBack = await eventually(async () => {
      const back = (await sender.client.events(task.id)).filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending');
      return back.length > 0 && back;
    }, 30_000, 'the task handed back');
    expect(handedBack[0]!.note).toMatch(new RegExp(`^handed back: could not reach the A2A agent at http://127.0.0.1:${closed}/`));
    // Stopped (a run under way is handed back too), the task waits with its one attempt unspent.
    await instance.stop();
    expect(await sender.client.getTask(task.id)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('fails the Baton task when the remote agent fails it', async () => {
    const task = await sender.client.handoff({ to: worker.id, title: 'Translate but fail', maxAttempts: 1, payload: { task_type: 'translate' } });
    const failed = await eventually(async () => { const t = await sender.client.getTask(task.id); return t.status === 'failed' && t; });
    expect(failed.status_reason).toMatch(/the remote A2A agent failed the task: no dictionary here/);
  });
});
