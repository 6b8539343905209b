/**
 * `baton mcp`, driven as an LLM host drives it: two servers (agents A and B) as separate processes, each
 * reached through the MCP SDK's own client over stdio. Every step of the hand-off is a tool call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAs, cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

interface Session { client: Client; agent: TestAgent; updates: string[] }

/** A `baton mcp` server as its own process; by default it re-reads subscriptions only once a minute, so updates come by push. */
async function connect(agent: TestAgent, flags: string[] = ['--poll', '60']): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cliPath, 'mcp', ...flags],
    env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'warn' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'baton-test-host', version: '1.0.0' });
  await client.connect(transport);
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
  return { client, agent, updates };
}

/** Every tool this file has called, so that the last test can say none was left out. */
const called = new Set<string>();

const call = async (s: Session, name: string, args: Record<string, unknown> = {}) => {
  called.add(name);
  return (await s.client.callTool({ name, arguments: args })) as CallToolResult;
};

/** A tool call that must succeed; its structured content. */
async function use<T = any>(s: Session, name: string, args: Record<string, unknown> = {}): Promise<T> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const result = await call(s, name, args);
  expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
  expect(result.content[0]).toMatchObject({ type: 'text' });
  return result.structuredContent as T;
}

describe('baton mcp', () => {
  let a: Session;
  let b: Session;
  let c: Session;
  beforeAll(async () => {
    [a, b, c] = await Promise.all([
      newAgent('mcp-lead').then(connect),
      newAgent('mcp-coder', { capabilities: ['code'] }).then(connect),
      newAgent('mcp-other').then(connect),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a, b, c].filter(Boolean).map((s) => s.client.close()));
  });

  it('offers every agent action as a tool with a described input schema, the resources and the loop prompt', async () => {
    const { tools } = await a.client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(['answer', 'artifact_get', 'ask', 'broadcast', 'cancel', 'chain', 'claim', 'complete', 'discover', 'fail',
      'fan_out', 'handoff', 'inbox', 'list_tasks', 'message', 'progress', 'reassign', 'reject', 'release', 'retry', 'show_task',
      'start', 'status', 'wait_for'].sort());
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(30);
      expect(t.inputSchema.type).toBe('object');
    }
    const handoff = tools.find((t) => t.name === 'handoff')!;
    expect(handoff.inputSchema.required).toEqual(expect.arrayContaining(['to', 'title']));
    expect((handoff.inputSchema.properties as Record<string, { description?: string }>).expected_outputs!.description).toMatch(/required/);

    const { resources } = await a.client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual(['baton://inbox', 'baton://tasks']);
    const { resourceTemplates } = await a.client.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate).sort()).toEqual(['baton://artifact/{task}/{name}', 'baton://task/{id}']);
    const prompt = await a.client.getPrompt({ name: 'baton-loop', arguments: {} });
    expect(JSON.stringify(prompt.messages)).toMatch(/claim/);
    expect(a.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
  });

  it('carries a hand-off from A to B and back through tool calls alone: progress, a question, the answer, the artifact', async () => {
    const sent = await use(a, 'handoff', {
      to: b.agent.id, title: 'Write slugify', description: 'A slugify function with tests.',
      payload: { language: 'ts' }, priority: 'high',
      expected_outputs: [{ name: 'slugify.ts', media_type: 'text/plain', required: true }],
    });
    const id: string = sent.task.id;
    expect(sent.task).not.toHaveProperty('claim_token');

    const claimed = await use(b, 'claim', { task: id.slice(0, 8) });
    expect(claimed.tasks[0]).toMatchObject({ id, status: 'in_progress', claimed_by: b.agent.id });
    expect(claimed.tasks[0]).not.toHaveProperty('claim_token');

    await use(b, 'progress', { task: id, message: 'reading the spec', percent: 20 });
    const asked = await use(b, 'ask', { task: id, question: 'Unicode or ASCII only?' });
    expect(asked.task.status).toBe('input_required');

    const aInbox = await use(a, 'inbox', { task: id });
    expect(aInbox.messages.map((m: { body: unknown }) => JSON.stringify(m.body)).join('\n')).toMatch(/Unicode or ASCII only/);
    await use(a, 'answer', { task: id, answer: 'ASCII only' });

    const shown = await use(b, 'show_task', { task: id });
    expect(shown.task.status).toBe('in_progress');
    expect(shown.thread.map((m: { body: unknown }) => JSON.stringify(m.body)).join('\n')).toMatch(/ASCII only/);
    expect(shown.history.length).toBeGreaterThan(2);

    const source = 'export const slugify = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-");\n';
    const done = await use(b, 'complete', {
      task: id, summary: 'slugify written', metrics: { tests_passed: 3 },
      artifacts: [{ name: 'slugify.ts', text: source }],
    });
    expect(done.task).toMatchObject({ status: 'completed' });

    const result = await use(a, 'show_task', { task: id });
    expect(result.task.result).toMatchObject({ status: 'success', summary: 'slugify written', metrics: { tests_passed: 3 } });
    expect(result.artifacts.map((x: { name: string }) => x.name)).toEqual(['slugify.ts']);
    const artifact = await use(a, 'artifact_get', { task: id, name: 'slugify.ts' });
    expect(artifact.text).toBe(source);
    // Called plainly, wait_for answers with the ended task's result and artifacts (as a task: mcp.tasks.test.ts).
    const waited = await use(a, 'wait_for', { task: id, timeout_seconds: 5 });
    expect(waited.task).toMatchObject({ id, status: 'completed' });
    expect(waited.artifacts.map((x: { name: string }) => x.name)).toEqual(['slugify.ts']);
    const read = await a.client.readResource({ uri: `baton://artifact/${id}/slugify.ts` });
    expect(read.contents[0]).toMatchObject({ text: source });
  });

  it('queues a hand-off to an offline agent as baton handoff does, and refuses it when told to', async () => {
    const away = await newAgent('mcp-away'); // registered, never heard from: offline
    const queued = await call(a, 'handoff', { to: away.id, title: 'To someone away, queued' });
    expect(queued.isError).toBeFalsy();
    expect((queued.content[0] as { text: string }).text).toContain(`${away.id} is offline`);
    expect((queued.structuredContent as { task: unknown }).task).toMatchObject({ status: 'pending', to_agent: away.id });
    const refused = await call(a, 'handoff', { to: away.id, title: 'To someone away', allow_offline: false });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { error: { code: string; hint: string | null } }).error).toMatchObject({ code: 'BT011', hint: expect.any(String) });
    const cli = await cliAs(a.agent.token, stack)('handoff', away.id, 'To someone away', '--online-only');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('offline');
  });

  it('refuses, as a tool error with the code and a hint, to complete a task the agent does not hold', async () => {
    // Addressed to B, so B sees it, but B has not claimed it: B's complete is refused by the database.
    const sent = await use(a, 'handoff', { to: b.agent.id, title: 'Not yours to finish' });
    const refused = await call(b, 'complete', { task: sent.task.id, summary: 'done, trust me' });
    expect(refused.isError).toBe(true);
    const { error } = refused.structuredContent as { error: { code: string; message: string; hint: string | null } };
    expect(error.code).toMatch(/^BT\d{3}$/);
    expect(error.hint).toBeTruthy();
    expect((refused.content[0] as { text: string }).text).toContain(error.code);
    expect((refused.content[0] as { text: string }).text).toContain('Hint:');
    // Nothing changed: it still waits, with no result.
    expect((await use(a, 'show_task', { task: sent.task.id })).task).toMatchObject({ status: 'pending', claimed_by: null, result: null });
    // Held by B, it is still not C's to complete (C cannot even see it).
    await use(b, 'claim', { task: sent.task.id });
    const other = await call(c, 'complete', { task: sent.task.id });
    expect(other.isError).toBe(true);
    expect((other.structuredContent as { error: { code: string } }).error.code).toMatch(/^BT\d{3}$/);
    expect((await use(b, 'show_task', { task: sent.task.id })).task).toMatchObject({ status: 'in_progress', claimed_by: b.agent.id });

    const bad = await call(b, 'complete', { task: sent.task.id, artifacts: [{ name: 'x.txt' }] });
    expect(bad.isError).toBe(true);
    expect((bad.content[0] as { text: string }).text).toMatch(/exactly one of text, base64 or path/);
  });

  it('lists the agent\'s open tasks unless asked for other statuses', async () => {
    const open = await use(a, 'handoff', { to: c.agent.id, title: 'still to do' });
    const done = await use(a, 'handoff', { to: c.agent.id, title: 'done already' });
    await use(c, 'claim', { task: done.task.id });
    await use(c, 'complete', { task: done.task.id, summary: 'done' });
    const ids = (listed: { tasks: Array<{ id: string }> }) => listed.tasks.map((t) => t.id);
    const mine = ids(await use(c, 'list_tasks'));
    expect(mine).toContain(open.task.id);
    expect(mine).not.toContain(done.task.id);
    expect(ids(await use(c, 'list_tasks', { status: ['completed'] }))).toEqual([done.task.id]);
  });

  it('tells a subscriber to A\'s inbox when B hands A a follow-up', async () => {
    await a.client.subscribeResource({ uri: 'baton://inbox' });
    const before = a.updates.length;
    const sent = await use(a, 'handoff', { to: b.agent.id, title: 'Review and hand back' });
    await use(b, 'claim', { task: sent.task.id });
    await use(b, 'complete', { task: sent.task.id, summary: 'reviewed', follow_up: { to: a.agent.id, title: 'Merge it', reason: 'review passed' } });
    await eventually(async () => a.updates.slice(before).includes('baton://inbox'), 15_000, 'an inbox update');
    const inbox = await a.client.readResource({ uri: 'baton://inbox' });
    const waiting = JSON.parse((inbox.contents[0] as { text: string }).text).waiting as Array<{ title: string; parent_task_id: string }>;
    expect(waiting).toContainEqual(expect.objectContaining({ title: 'Merge it', parent_task_id: sent.task.id }));
    await a.client.unsubscribeResource({ uri: 'baton://inbox' });
  });

  it('fans out through a tool, hands the join back with every result, and retries a failed task', async () => {
    const parent = await use(a, 'handoff', { to: a.agent.id, title: 'Survey two libraries' });
    await use(a, 'claim', { task: parent.task.id });
    const fanned = await use(a, 'fan_out', {
      task: parent.task.id, join: 'all',
      subtasks: [{ title: 'Read pg-boss', to: b.agent.id }, { title: 'Read graphile-worker', to: b.agent.id }],
    });
    expect(fanned.tasks).toHaveLength(2);
    for (const id of fanned.tasks) {
      await use(b, 'claim', { task: id });
      await use(b, 'complete', { task: id, summary: `read ${id.slice(0, 4)}` });
    }
    const join = await use(a, 'claim', { task: fanned.join });
    expect(join.tasks[0]).toMatchObject({ id: fanned.join, status: 'in_progress', depends_on: fanned.tasks });
    const shown = await use(a, 'show_task', { task: fanned.join });
    expect(shown.dependencies.map((d: { result: { summary: string } }) => d.result.summary))
      .toEqual(fanned.tasks.map((id: string) => `read ${id.slice(0, 4)}`));

    const flaky = await use(a, 'handoff', { to: b.agent.id, title: 'Flaky', max_attempts: 1 });
    await use(b, 'claim', { task: flaky.task.id });
    await use(b, 'fail', { task: flaky.task.id, error: 'timeout' });
    const retried = await use(a, 'retry', { task: flaky.task.id });
    expect(retried.task).toMatchObject({ retry_of: flaky.task.id, status: 'pending', title: 'Flaky' });
  });

  it('without push, notices new work by polling', async () => {
    const polled = await connect(await newAgent('mcp-polled'), ['--no-push', '--poll', '1']);
    try {
      // Heard from before the host's handshake finished: work may go to it at once, without allow_offline.
      expect((await polled.agent.client.agent(polled.agent.id)).last_heartbeat).not.toBeNull();
      await polled.client.subscribeResource({ uri: 'baton://inbox' });
      await use(a, 'handoff', { to: polled.agent.id, title: 'Found by polling' });
      await eventually(async () => polled.updates.includes('baton://inbox'), 15_000, 'an inbox update');
    } finally {
      await polled.client.close();
    }
  });

  it('runs the rest of the loop through tools: status, discover, broadcast, start, release, reassign, reject, cancel, chain, message', async () => {
    const me = await use(a, 'status', { message: 'handing out work' });
    expect(me.agent).toMatchObject({ id: a.agent.id, status_message: 'handing out work' });
    const found = await use(a, 'discover', { capabilities: ['code'] });
    expect(found.agents.map((p: { id: string }) => p.id)).toContain(b.agent.id);

    const offered = await use(a, 'broadcast', { capabilities: ['code'], title: 'Anyone who codes' });
    const [claimed] = (await use(b, 'claim', { task: offered.task.id, start: false })).tasks;
    expect(claimed).toMatchObject({ id: offered.task.id, status: 'claimed', claimed_by: b.agent.id });
    expect((await use(b, 'start', { task: offered.task.id })).task).toMatchObject({ status: 'in_progress' });
    expect((await use(b, 'release', { task: offered.task.id, reason: 'lunch' })).task).toMatchObject({ status: 'pending', claimed_by: null });

    const moved = await use(a, 'handoff', { to: b.agent.id, title: 'Move me' });
    expect((await use(a, 'reassign', { task: moved.task.id, to: c.agent.id, reason: 'b is busy' })).task).toMatchObject({ to_agent: c.agent.id });
    expect((await use(c, 'reject', { task: moved.task.id, reason: 'not mine either' })).task).toMatchObject({ status: 'rejected' });

    const dropped = await use(a, 'handoff', { to: b.agent.id, title: 'Never mind' });
    expect((await use(a, 'cancel', { task: dropped.task.id, reason: 'changed my mind' })).task).toMatchObject({ status: 'cancelled' });
    const chain = await use(a, 'chain', { task: dropped.task.id });
    expect(chain.chain.map((r: { id: string }) => r.id)).toContain(dropped.task.id);

    await use(a, 'message', { to: b.agent.id, text: 'thanks for the help' });
    const inbox = await use(b, 'inbox', { unread: true });
    expect(inbox.messages.map((m: { body: { text?: string } }) => m.body.text)).toContain('thanks for the help');
  });

  it('has called every tool it offers', async () => {
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name).filter((name) => !called.has(name))).toEqual([]);
  });
});
