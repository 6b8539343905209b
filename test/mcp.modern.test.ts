/**
 * `baton mcp` in MCP 2026-07-28, as its own process beside daemons doing the work: the SDK's 2.x client
 * pinned to 2026-07-28 (stateless requests, server/discover, input_required answered by its elicitation
 * handler), and a host speaking the tasks extension (`io.modelcontextprotocol/tasks`) as its
 * specification has it, written out as JSON-RPC lines (no SDK implements the extension's client). The
 * 2025 eras are served from the same command (mcp.test.ts, mcp.tasks.test.ts).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const envOf = (agent: TestAgent) => ({ PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'info' });

const closers: Array<() => Promise<void>> = [];
afterAll(async () => { await Promise.all(closers.map((close) => close())); });

/** The SDK's 2.x client pinned to 2026-07-28, with a person who answers every question `answer`. */
async function sdkHost(agent: TestAgent, answer = 'yes') {
  const client = new Client({ name: 'baton-modern-host', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
  });
  const questions: string[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    questions.push(String(request.params.message));
    return { action: 'accept', content: { answer } };
  });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [cliPath, 'mcp'], env: envOf(agent), stderr: 'pipe' }));
  closers.push(() => client.close());
  return { client, questions };
}

type Answer = { id: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/** A host speaking 2026-07-28 and the tasks extension line by line, as the specifications write it. */
class WireHost {
  private next = 1;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  readonly stderr: string[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<void>;

  constructor(agent: TestAgent, private readonly capabilities: Record<string, unknown> = { extensions: { [TASKS]: {} } }) {
    this.child = spawn(process.execPath, [cliPath, 'mcp'], { env: envOf(agent) });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as Answer;
      this.waiting.get(message.id)?.(message);
      this.waiting.delete(message.id);
    });
    readline.createInterface({ input: this.child.stderr }).on('line', (line) => this.stderr.push(line));
    closers.push(() => this.close());
  }

  /** One request with the 2026-07-28 envelope in its _meta; its answer (result or error). */
  send(method: string, params: Record<string, unknown> = {}, capabilities = this.capabilities): Promise<Answer> {
    const id = this.next++;
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'wire-host', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': capabilities,
    };
    const answered = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...meta, ...(params._meta as object) } } })}\n`);
    return answered;
  }

  async result(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const answer = await this.send(method, params);
    if (answer.error) throw new Error(`${method}: ${answer.error.code} ${answer.error.message}`);
    return answer.result!;
  }

  /** Polls tasks/get until the task has this status; its answer then. */
  async until(taskId: string, status: string): Promise<Record<string, unknown>> {
    let seen: Record<string, unknown> | undefined;
    await eventually(async () => {
      const now = await this.result('tasks/get', { taskId });
      if (now.status === status) seen = now;
      return seen !== undefined;
    }, 30_000, `task ${taskId} to be ${status}`);
    return seen!;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.stdin.end();
    await this.exited;
  }
}

describe('baton mcp in MCP 2026-07-28', () => {
  it('is discovered as 2026-07-28 with the tasks extension, lists its tools and answers plain calls, with no initialize', async () => {
    const lead = await newAgent('mcpm-plain');
    const worker = await newAgent('mcpm-absent');
    const { client } = await sdkHost(lead);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {}, prompts: {}, extensions: { [TASKS]: {} } });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['status', 'handoff', 'wait_for', 'claim', 'complete', 'inbox']));
    const made = await client.callTool({ name: 'handoff', arguments: { to: worker.id, title: 'queued in 2026' } });
    expect(made.isError).toBeFalsy();
    expect(made.structuredContent).toMatchObject({ task: { to_agent: worker.id, status: 'pending', from_agent: lead.id } });
    const { contents } = await client.readResource({ uri: 'baton://tasks' });
    expect(JSON.parse(String((contents[0] as { text: string }).text)).sent.map((t: { title: string }) => t.title)).toContain('queued in 2026');
    // A refusal is a tool error with Baton's code and hint, as in the 2025 eras.
    const refused = await client.callTool({ name: 'complete', arguments: { task: (made.structuredContent as { task: { id: string } }).task.id, summary: 'not mine' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/BT\d{3}/);
  });

  it('tells a host listening on subscriptions/listen that its inbox changed, when work is pushed to it', async () => {
    const lead = await newAgent('mcpm-listener');
    const sender = await newAgent('mcpm-sender');
    const { client } = await sdkHost(lead);
    expect(client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
    const updated: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', async (n) => { updated.push(String(n.params.uri)); });
    const subscription = await client.listen({ resourceSubscriptions: ['baton://inbox'] });
    expect(subscription.honoredFilter).toMatchObject({ resourceSubscriptions: ['baton://inbox'] });
    await sender.client.handoff({ to: lead.id, title: 'for the listener' });
    await eventually(async () => updated.includes('baton://inbox'), 30_000, 'notifications/resources/updated for the inbox');
    const { contents } = await client.readResource({ uri: 'baton://inbox' });
    expect(String((contents[0] as { text: string }).text)).toContain('for the listener');
    await subscription.close();
  });

  it('puts a worker\'s question to the person as input_required while wait_for waits, and takes the answer from the retry', async () => {
    const lead = await newAgent('mcpm-asker');
    const worker = await newAgent('mcpm-asked');
    await daemon(worker, { executors: { '*': async (_task, ctx) => `painted ${await ctx.ask('Which colour?')}` } });
    const { client, questions } = await sdkHost(lead, 'green');
    const made = await lead.client.handoff({ to: worker.id, title: 'Paint it' });
    const done = await client.callTool({ name: 'wait_for', arguments: { task: made.id, timeout_seconds: 60 } });
    expect(questions).toEqual([expect.stringContaining('Which colour?')]);
    expect(done.isError).toBeFalsy();
    expect(JSON.stringify(done.content)).toContain('painted green');
    const [answer] = await lead.client.messages({ taskId: made.id, kind: 'answer' });
    expect(answer).toMatchObject({ from_agent: lead.id, body: { text: 'green' } });
  });

  it('asks a followed hand-off\'s question as input_required, and its retry hands off no second time', async () => {
    const lead = await newAgent('mcpm-once');
    const worker = await newAgent('mcpm-asks-once');
    await daemon(worker, { executors: { '*': async (_task, ctx) => `went with ${await ctx.ask('Tabs or spaces?')}` } });
    const { client, questions } = await sdkHost(lead, 'tabs');
    const done = await client.callTool({ name: 'handoff', arguments: { to: worker.id, title: 'Format it', follow: true } });
    expect(questions).toEqual([expect.stringContaining('Tabs or spaces?')]);
    expect(JSON.stringify(done.content)).toContain('went with tabs');
    expect((await lead.client.listTasks({ box: 'sent' })).map((t) => t.title)).toEqual(['Format it']);
  });

  it('follows a hand-off as a task of the extension: get, a question through tasks/update, the result', async () => {
    const lead = await newAgent('mcpm-follower');
    const worker = await newAgent('mcpm-painter');
    await daemon(worker, { executors: { '*': async (_task, ctx) => {
      const colour = await ctx.ask('Which colour?');
      await ctx.artifact('palette.json', JSON.stringify({ colour }), { mediaType: 'application/json' });
      return `painted ${colour}`;
    } } });
    const host = new WireHost(lead);
    const discovered = await host.result('server/discover');
    expect(discovered).toMatchObject({ supportedVersions: expect.arrayContaining(['2026-07-28']), capabilities: { extensions: { [TASKS]: {} } } });

    const created = await host.result('tools/call', { name: 'handoff', arguments: { to: worker.id, title: 'Paint the shed', follow: true } });
    // Working, or already asking: the daemon hears of the hand-off by push and may ask before the answer.
    expect(created).toMatchObject({ resultType: 'task', status: expect.stringMatching(/^(working|input_required)$/), ttlMs: null, pollIntervalMs: expect.any(Number) });
    const taskId = String(created.taskId);
    // The extension's task is the Baton task, durably made before the answer.
    expect(await lead.client.getTask(taskId)).toMatchObject({ to_agent: worker.id, title: 'Paint the shed' });

    const asked = await host.until(taskId, 'input_required');
    const [key, request] = Object.entries(asked.inputRequests as Record<string, { method: string; params: { message: string } }>)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', message: expect.stringContaining('Which colour?') } });
    expect(asked).toMatchObject({ resultType: 'complete', taskId, statusMessage: expect.stringContaining('waiting for your answer') });
    // An answer to a key never asked is passed over; the asked key's answer is Baton's answer.
    expect(await host.result('tasks/update', { taskId, inputResponses: { 'question-none': { action: 'accept', content: { answer: 'red' } } } })).toMatchObject({ resultType: 'complete' });
    expect(await host.result('tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { answer: 'blue' } } } })).toMatchObject({ resultType: 'complete' });

    const done = await host.until(taskId, 'completed');
    const result = done.result as { resultType: string; isError?: boolean; content: Array<{ type: string; text?: string; resource?: { uri: string; text?: string } }> };
    expect(result.resultType).toBe('complete');
    expect(result.isError).toBeFalsy();
    expect(result.content[0]!.text).toContain('painted blue');
    expect(result.content).toContainEqual({ type: 'resource', resource: { uri: `baton://artifact/${taskId}/palette.json`, mimeType: 'application/json', text: '{"colour":"blue"}' } });
    const answers = await lead.client.messages({ taskId, kind: 'answer' });
    expect(answers.map((m) => m.body)).toEqual([{ text: 'blue' }]);
  });

  it('keeps following after a restart of baton mcp, cancels through tasks/cancel, and refuses what the extension refuses', async () => {
    const lead = await newAgent('mcpm-restart');
    const worker = await newAgent('mcpm-slow');
    let aborted = false;
    await daemon(worker, { executors: { '*': (_task, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => { aborted = true; reject(ctx.signal.reason); })) } });
    const first = new WireHost(lead);
    const created = await first.result('tools/call', { name: 'handoff', arguments: { to: worker.id, title: 'Never ends', follow: true } });
    const taskId = String(created.taskId);
    await eventually(async () => (await lead.client.getTask(taskId)).status === 'in_progress', 20_000, 'the work to start');
    await first.close();

    const second = new WireHost(lead);
    expect(await second.result('tasks/get', { taskId })).toMatchObject({ taskId, status: 'working' });
    expect(await second.result('tasks/cancel', { taskId })).toMatchObject({ resultType: 'complete' });
    await second.until(taskId, 'cancelled');
    await eventually(async () => aborted, 20_000, 'the daemon to stop the work');
    // Cancelling what has ended is acknowledged, and the end stays.
    expect(await second.result('tasks/cancel', { taskId })).toMatchObject({ resultType: 'complete' });

    // The extension's errors: -32021 without the extension declared, -32602 for a task not the agent's.
    const plainClient = await second.send('tasks/get', { taskId }, {});
    expect(plainClient.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
    const stranger = new WireHost(await newAgent('mcpm-stranger'));
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const answer = await stranger.send(method, { taskId, inputResponses: {} });
      expect(answer.error?.code, method).toBe(-32602);
    }
    expect((await stranger.send('tasks/get', { taskId: 42 })).error?.code).toBe(-32602);
    expect((await lead.client.getTask(taskId)).status).toBe('cancelled');
  });

  it('answers a client without the extension plainly: a followed hand-off waits for its end', async () => {
    const lead = await newAgent('mcpm-waiter');
    const worker = await newAgent('mcpm-quick');
    await daemon(worker, { executors: { '*': () => 'done quickly' } });
    const host = new WireHost(lead, {});
    const answer = await host.result('tools/call', { name: 'handoff', arguments: { to: worker.id, title: 'Quick one', follow: true } });
    expect(answer.resultType).toBe('complete');
    expect(JSON.stringify(answer.content)).toContain('done quickly');
    const met = host.stderr.filter((l) => l.includes('host connected')).map((l) => JSON.parse(l));
    expect(met).toEqual([expect.objectContaining({ host: { name: 'wire-host', version: '1.0.0' }, protocol: '2026-07-28', capabilities: {} })]);
  });
});
