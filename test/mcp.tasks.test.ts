/**
 * MCP tasks backed by Baton: the SDK's own (experimental) task client against `baton mcp` as its own
 * process, with a daemon doing the work. A hand-off called as a task comes back as a handle at once;
 * its result and artifacts come through tasks/result, a question through elicitation, cancel through
 * tasks/cancel, and a restarted server still answers for it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, LoggingMessageNotificationSchema, TaskStatusNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

interface Host { client: Client; questions: string[]; statuses: Array<{ taskId: string; status: string }>; logged: unknown[]; stderr: string[] }

const hosts: Host[] = [];
afterAll(async () => { await Promise.all(hosts.map((h) => h.client.close())); });

/** A host with a person who answers every question `answer` (or declines, without one). */
async function host(agent: TestAgent, answer?: string | ((question: string) => Promise<string>), logLevel = 'warn'): Promise<Host> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cliPath, 'mcp'],
    env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: logLevel },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'baton-task-host', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {} } } });
  const made: Host = { client, questions: [], statuses: [], logged: [], stderr: [] };
  transport.stderr?.on('data', (chunk: Buffer) => made.stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    made.questions.push(request.params.message);
    if (answer === undefined) return { action: 'decline' };
    return { action: 'accept', content: { answer: typeof answer === 'string' ? answer : await answer(request.params.message) } };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { made.logged.push(n.params.data); });
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => { made.statuses.push({ taskId: n.params.taskId, status: n.params.status }); });
  await client.connect(transport);
  hosts.push(made);
  return made;
}

async function close(h: Host): Promise<void> {
  hosts.splice(hosts.indexOf(h), 1);
  await h.client.close();
}

/** Hands off as a task and returns the handle alone, as a host that follows it later does. */
async function handOffAsTask(h: Host, args: Record<string, unknown>) {
  const made = await h.client.request({ method: 'tools/call', params: { name: 'handoff', arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  return made.task;
}

/** Calls a tool as a task: the handle, then (when `follow`) every message until the result. */
async function callAsTask(h: Host, name: string, args: Record<string, unknown>) {
  const stream = h.client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: { ttl: 3_600_000 }, timeout: 120_000 });
  const seen: string[] = [];
  let taskId: string | undefined;
  let result: CallToolResult | undefined;
  for await (const message of stream) {
    seen.push(message.type === 'taskStatus' ? `status ${message.task.status}` : message.type);
    if (message.type === 'taskCreated') taskId = message.task.taskId;
    if (message.type === 'result') result = message.result as CallToolResult;
    if (message.type === 'error') throw message.error;
  }
  return { taskId: taskId!, result: result!, seen };
}

describe('baton mcp, hand-offs as MCP tasks', () => {
  it('declares task support, and a plain call of the same tool answers at once as before', async () => {
    const lead = await newAgent('mcpt-plain');
    const h = await host(lead);
    expect(h.client.getServerCapabilities()?.tasks).toMatchObject({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await h.client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
    expect(support).toMatchObject({ handoff: 'optional', broadcast: 'optional', fan_out: 'optional', wait_for: 'optional', claim: 'forbidden', show_task: 'forbidden' });
    const worker = await newAgent('mcpt-absent');
    const plain = await h.client.callTool({ name: 'handoff', arguments: { to: worker.id, title: 'queued', allow_offline: true } }) as CallToolResult;
    expect(plain.isError).toBeFalsy();
    expect((plain.structuredContent as { task: { status: string } }).task.status).toBe('pending');
  });

  it('completes a hand-off called as a task, asks its question of the person through elicitation, and returns the result and artifacts', async () => {
    const lead = await newAgent('mcpt-lead');
    const worker = await newAgent('mcpt-worker');
    await daemon(worker, {
      executors: {
        '*': async (_task, ctx) => {
          const colour = await ctx.ask('Which colour?');
          await ctx.artifact('palette.json', JSON.stringify({ colour }), { mediaType: 'application/json' });
          return { status: 'success', summary: `painted ${colour}` };
        },
      },
    });
    const h = await host(lead, 'blue');
    const { taskId, result, seen } = await callAsTask(h, 'handoff', { to: worker.id, title: 'Paint the fence' });
    expect(seen[0]).toBe('taskCreated');
    expect(seen).toContain('status input_required');
    expect(h.questions).toEqual([expect.stringContaining('Which colour?')]);
    expect(result.isError).toBeFalsy();
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('painted blue') });
    expect(result.content).toContainEqual({ type: 'resource', resource: { uri: `baton://artifact/${taskId}/palette.json`, mimeType: 'application/json', text: '{"colour":"blue"}' } });
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId });

    // The MCP task is the Baton task: the same id, the answer as Baton's answer in the lead's name.
    const task = await lead.client.getTask(taskId);
    expect(task).toMatchObject({ status: 'completed', result: { summary: 'painted blue' } });
    const [answer] = await lead.client.messages({ taskId, kind: 'answer' });
    expect(answer).toMatchObject({ from_agent: lead.id, body: { text: 'blue' } });
    expect(await h.client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed' });
    const listed = await h.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(taskId);
  });

  it('cancels the Baton task through tasks/cancel, and the daemon stops its work', async () => {
    const lead = await newAgent('mcpt-canceller');
    const worker = await newAgent('mcpt-busy');
    let aborted = false;
    await daemon(worker, { executors: { '*': (_task, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => { aborted = true; reject(ctx.signal.reason); })) } });
    const h = await host(lead);
    const made = await handOffAsTask(h, { to: worker.id, title: 'Never ends' });
    const taskId = made.taskId;
    expect(made).toMatchObject({ status: 'working', ttl: null });
    await eventually(async () => (await lead.client.getTask(taskId)).status === 'in_progress', 20_000, 'the work to start');
    const cancelled = await h.client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: 'cancelled' });
    expect((await lead.client.getTask(taskId)).status).toBe('cancelled');
    await eventually(async () => aborted, 20_000, 'the daemon to stop the work');
    const result = await h.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
  });

  it('answers tasks/get and tasks/result from a restarted server, and finds no stranger\'s task', async () => {
    const lead = await newAgent('mcpt-restart');
    const worker = await newAgent('mcpt-later');
    const first = await host(lead);
    const { taskId } = await handOffAsTask(first, { to: worker.id, title: 'Done after a restart', allow_offline: true });
    await close(first);

    await daemon(worker, { executors: { '*': async (_task, ctx) => { await ctx.artifact('notes.md', '# done\n', { mediaType: 'text/markdown' }); return 'done later'; } } });
    const second = await host(lead);
    await eventually(async () => (await second.client.experimental.tasks.getTask(taskId)).status === 'completed', 30_000, 'the task done, seen by the new server');
    const result = await second.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('done later') });
    expect(result.content).toContainEqual(expect.objectContaining({ type: 'resource', resource: expect.objectContaining({ text: '# done\n' }) }));

    // Another agent's host: not found, as Baton says of a task its agent may not see.
    const stranger = await host(await newAgent('mcpt-stranger'));
    await expect(stranger.client.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    await expect(stranger.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/not found/i);
    await expect(stranger.client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);
    await expect(stranger.client.experimental.tasks.getTask('not-a-task')).rejects.toThrow(/not found/i);
  });

  it('tells the host of each change of a task it follows, by push', async () => {
    const lead = await newAgent('mcpt-told');
    const worker = await newAgent('mcpt-teller');
    const h = await host(lead);
    const { taskId } = await handOffAsTask(h, { to: worker.id, title: 'Tell me', allow_offline: true });
    await daemon(worker, { executors: { '*': () => 'told' } });
    await eventually(async () => h.statuses.some((s) => s.taskId === taskId && s.status === 'completed'), 30_000, 'a completed status notification');
  });

  it('says Baton\'s refusal (BT011 and its hint) when a task-augmented hand-off creates nothing', async () => {
    const lead = await newAgent('mcpt-refused');
    const absent = await newAgent('mcpt-offline');
    const h = await host(lead);
    const err = await h.client.request({ method: 'tools/call', params: { name: 'handoff', arguments: { to: absent.id, title: 'to nobody', allow_offline: false }, task: { ttl: 60_000 } } }, CreateTaskResultSchema)
      .then(() => undefined, (e: McpError) => e);
    expect(err).toBeInstanceOf(McpError);
    expect(err!.code).toBe(-32602);
    expect(err!.message).toMatch(/BT011: .*offline/);
    expect(err!.message).toMatch(/allow.offline/);
    expect(err!.data).toMatchObject({ code: 'BT011' });
    expect(await lead.client.listTasks({ box: 'sent' })).toEqual([]);
  });

  it('refuses a tool without task support called as a task, with -32601, before it acts', async () => {
    const lead = await newAgent('mcpt-forbidden');
    const other = await newAgent('mcpt-other');
    const h = await host(lead);
    const err = await h.client.request({ method: 'tools/call', params: { name: 'message', arguments: { to: other.id, text: 'once only' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema)
      .then(() => undefined, (e: McpError) => e);
    expect(err?.code).toBe(-32601);
    expect(err?.message).toMatch(/cannot be called as a task/);
    expect((await other.client.messages({ unread: true })).filter((m) => m.from_agent === lead.id)).toEqual([]);
  });

  it('answers -32602 for a task id that is not a string', async () => {
    const h = await host(await newAgent('mcpt-ids'));
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      for (const taskId of [42, null, undefined]) {
        const err = await h.client.request({ method, params: taskId === undefined ? {} : { taskId } } as never, CreateTaskResultSchema).then(() => undefined, (e: McpError) => e);
        expect(err?.code, `${method} ${String(taskId)}`).toBe(-32602);
      }
    }
  });

  it('keeps an agent\'s MCP tasks to those it sent: get, result, list and cancel agree, and only the sender\'s host is asked', async () => {
    const lead = await newAgent('mcpt-sender');
    const worker = await newAgent('mcpt-receiver');
    await daemon(worker, { executors: { '*': async (_task, ctx) => `formatted with ${await ctx.ask('tabs or spaces?')}` } });
    const sending = await host(lead, 'spaces');
    const receiving = await host(worker, 'tabs');
    const { taskId } = await handOffAsTask(sending, { to: worker.id, title: 'Format the file' });
    await eventually(async () => (await lead.client.getTask(taskId)).status === 'input_required', 30_000, 'the question');

    // The receiving agent's host: the task is not one of its MCP tasks, by every method alike.
    await expect(receiving.client.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    await expect(receiving.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/not found/i);
    await expect(receiving.client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);
    expect((await receiving.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(taskId);
    const follow = await receiving.client.request({ method: 'tools/call', params: { name: 'wait_for', arguments: { task: taskId }, task: { ttl: 60_000 } } }, CreateTaskResultSchema)
      .then(() => undefined, (e: McpError) => e);
    expect(follow?.code).toBe(-32602);
    expect(follow?.message).toMatch(/only the tasks this agent sent[\s\S]*without "task"/);
    // It may still follow it plainly; and it is never asked the sender's question.
    const plain = await receiving.client.callTool({ name: 'wait_for', arguments: { task: taskId, timeout_seconds: 0 } }) as CallToolResult;
    expect(plain.content[0]).toMatchObject({ text: expect.stringMatching(/^Still open/) });
    expect(receiving.questions).toEqual([]);

    // The sender's host: listed, got, asked, answered, done.
    const listed = (await sending.client.experimental.tasks.listTasks()).tasks;
    expect(listed.map((t) => t.taskId)).toContain(taskId);
    for (const t of listed) expect((await sending.client.experimental.tasks.getTask(t.taskId)).taskId).toBe(t.taskId);
    const result = await sending.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('formatted with spaces') });
    expect(sending.questions).toEqual([expect.stringContaining('tabs or spaces?')]);
    expect(receiving.questions).toEqual([]);
  });

  it('tells the host that Baton refused its answer, in its log and the task\'s status message', async () => {
    const lead = await newAgent('mcpt-late');
    const worker = await newAgent('mcpt-asker');
    await daemon(worker, { executors: { '*': async (_task, ctx) => `went with ${await ctx.ask('which branch?')}` } });
    // The person takes long enough that the question is answered another way first (the CLI, say).
    let taskId = '';
    const h = await host(lead, async () => {
      await lead.client.answer(taskId, 'main');
      return 'develop';
    });
    taskId = (await handOffAsTask(h, { to: worker.id, title: 'Pick a branch' })).taskId;
    const result = await h.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('went with main') });
    await eventually(async () => h.logged.length > 0, 20_000, 'the refusal in the host\'s log');
    expect(h.logged).toContainEqual({ taskId, message: expect.stringMatching(/your answer "develop" was not taken: /) });
    expect((await h.client.experimental.tasks.getTask(taskId)).statusMessage).toMatch(/your answer "develop" was not taken/);
  });

  it('looks at a task again as soon as it changes, so an answer and a result reach tasks/result by push, not by a poll interval', async () => {
    const lead = await newAgent('mcpt-prompt');
    const worker = await newAgent('mcpt-quick');
    let h: Host | undefined;
    const asleep = (taskId: string, from: number) => h!.stderr.slice(from).some((line) => line.includes('tasks/result waits for a change') && line.includes(taskId));
    await daemon(worker, {
      executors: {
        '*': async (task, ctx) => {
          const answer = await ctx.ask('ready?');
          // The result comes once the host's tasks/result sleeps again, so that there is a look to wake.
          const from = h!.stderr.length;
          await eventually(async () => asleep(task.id, from), 60_000, 'the host\'s tasks/result to wait again');
          return `heard ${answer}`;
        },
      },
    });
    h = await host(lead, 'yes', 'debug');
    const { taskId, result } = await callAsTask(h, 'handoff', { to: worker.id, title: 'Check readiness' });
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('heard yes') });
    // The SDK's tasks/result sleeps a poll interval (2 s) between looks; Baton's server wakes it when a
    // question is queued for the host, when the answer is given here, and when the task's change is
    // pushed: the result, which came while it slept, woke it.
    const woke = h.stderr.filter((line) => line.includes('tasks/result looks again') && line.includes(taskId)).map((line) => String(JSON.parse(line).why));
    expect(woke, woke.join(', ')).toContain('pushed');
  });
});

describe('baton mcp under a budget', () => {
  it('hands off with a budget, and neither claims nor starts work under a spent one (BT017), as every path', async () => {
    const [lead, worker] = await Promise.all([newAgent('mcpb-lead'), newAgent('mcpb-worker')]);
    const [leading, working] = await Promise.all([host(lead), host(worker)]);
    const sent = await leading.client.callTool({ name: 'handoff', arguments: { to: worker.id, title: 'budgeted', allow_offline: true, budget: { tokens: 100 } } }) as CallToolResult;
    expect(sent.isError, JSON.stringify(sent.content)).toBeFalsy();
    const root = (sent.structuredContent as { task: { id: string } }).task.id;
    expect(await lead.client.budget(root)).toMatchObject({ tokens_left: 100, spent: false });
    // The worker claims it without starting, hands on a part, and a run reports what spends the budget.
    const claimed = await working.client.callTool({ name: 'claim', arguments: { task: root, start: false } }) as CallToolResult;
    expect(claimed.isError, JSON.stringify(claimed.content)).toBeFalsy();
    const part = await worker.client.handoff({ to: worker.id, title: 'part', parentTaskId: root });
    const held = await worker.client.getTask(root);
    await worker.client.recordUsage(root, held.claim_token, { runtime: 'test', model: 'scripted', inputTokens: 150, outputTokens: 0 });
    for (const [name, args] of [['claim', { task: part.id }], ['claim', {}], ['start', { task: root }]] as const) {
      const refused = await working.client.callTool({ name, arguments: args }) as CallToolResult;
      const said = JSON.stringify(refused.content);
      if (name === 'claim' && !('task' in args)) {
        // The next claimable task: there is none, the part being held.
        expect(said).toContain('Nothing to claim right now.');
        continue;
      }
      expect(refused.isError, said).toBe(true);
      expect(said).toContain('BT017');
    }
    expect((await worker.client.getTask(root)).status).toBe('claimed');
    expect((await worker.client.getTask(part.id)).status_reason).toMatch(/^held: the budget on task /);
  });
});
