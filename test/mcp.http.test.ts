/**
 * `baton mcp --http`: the real CLI serving MCP over Streamable HTTP, met with the SDK's HTTP client.
 * Each session acts as the agent whose bearer token opened it: two agents over one server see their
 * own identity and hand work to each other. As a protected resource (MCP's authorization section,
 * RFC 9728): its metadata at /.well-known/oauth-protected-resource; 401 with WWW-Authenticate naming
 * it for no token, a token that is no JWT, a revoked one and an expired one; a token in the URL
 * refused; a session answering to no other token. A hand-off made as an MCP task outlives its request
 * and its session: a new session follows it to its end. The same endpoint serves MCP 2026-07-28 to the
 * SDK's 2.x client (stateless, no session, the agent from the token on every request) and the tasks
 * extension's methods, with their routing headers, to a host that writes them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, SdkHttpError, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { admin, newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

let server: ChildProcess;
let endpoint = '';
let output = '';
const clients: Client[] = [];

beforeAll(async () => {
  server = spawn(process.execPath, [cliPath, 'mcp', '--http', '0'], {
    env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), LOG_LEVEL: 'info' },
  });
  server.stdout!.on('data', (c: Buffer) => { output += c; });
  server.stderr!.on('data', (c: Buffer) => { output += c; });
  await eventually(async () => /^http:\/\/127\.0\.0\.1:\d+\/mcp$/m.test(output), 30_000, 'the server\'s URL on stdout');
  endpoint = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(output)![1]!;
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  if (server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

async function host(agent: TestAgent | string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const token = typeof agent === 'string' ? agent : agent.token;
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'baton-http-host', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
const initialize = (token?: string) => fetch(endpoint, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } }),
});

describe('baton mcp over Streamable HTTP', () => {
  it('serves its protected-resource metadata and answers 401 naming it, for no token and tokens that are not live', async () => {
    const metadata = await (await fetch(new URL('/.well-known/oauth-protected-resource/mcp', endpoint))).json();
    expect(metadata).toMatchObject({ resource: endpoint, bearer_methods_supported: ['header'] });

    const none = await initialize();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', endpoint).href}"`);

    const garbage = await initialize('not-a-token');
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get('www-authenticate')).toMatch(/error="invalid_token", error_description="the agent token is not a JWT"/);

    const revoked = await newAgent('http-revoked');
    await admin.revokeAgent(revoked.id);
    const refused = await initialize(revoked.token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);

    const expiring = await newAgent('http-expiring');
    const expiresAt = new Date(Date.now() + 2000);
    const shortLived = await admin.issueToken(expiring.id, expiresAt);
    await eventually(async () => Date.now() > expiresAt.getTime() + 1000, 10_000, 'the token to expire');
    const expired = await initialize(shortLived);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toMatch(/error="invalid_token", error_description="the token expired at /);

    const inUrl = await fetch(`${endpoint}?access_token=${revoked.token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(inUrl.status).toBe(400);
    expect((await inUrl.json()).error.message).toMatch(/a token in the URL is refused/);
    // Nothing of it opened a session.
    expect(output).not.toMatch(/MCP session opened over HTTP.*http-revoked/);
  }, 60_000);

  it('acts, per session, as the agent whose token opened it; a session answers to no other token', async () => {
    const [lead, coder] = await Promise.all([newAgent('http-lead'), newAgent('http-coder')]);
    const [a, b] = await Promise.all([host(lead), host(coder)]);
    expect(text(await a.client.callTool({ name: 'status', arguments: {} }))).toContain(lead.id);
    expect(text(await b.client.callTool({ name: 'status', arguments: {} }))).toContain(coder.id);

    const handed = await a.client.callTool({ name: 'handoff', arguments: { to: coder.id, title: 'over HTTP' } });
    const taskId = (handed.structuredContent as { task: { id: string } }).task.id;
    const listed = await b.client.callTool({ name: 'list_tasks', arguments: {} });
    expect(JSON.stringify(listed.structuredContent)).toContain(taskId);

    // lead's session, with coder's token: no such session.
    const stolen = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${coder.token}`, 'mcp-session-id': a.transport.sessionId!, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'status', arguments: {} } }),
    });
    expect(stolen.status).toBe(404);
    // Paths name the server's files, not the host's: refused over HTTP.
    const claimed = await b.client.callTool({ name: 'claim', arguments: { task: taskId } });
    expect(claimed.isError).toBeFalsy();
    const withPath = await b.client.callTool({ name: 'complete', arguments: { task: taskId, summary: 'done', artifacts: [{ name: 'passwd', path: '/etc/passwd' }] } });
    expect(withPath.isError).toBe(true);
    expect(text(withPath)).toMatch(/path/i);
  }, 60_000);

  it('keeps a hand-off made as an MCP task beyond its request and its session: a new session follows it to its end', async () => {
    const [lead, worker] = await Promise.all([newAgent('http-task-lead'), newAgent('http-task-worker')]);
    const first = await host(lead);
    const made = await first.client.request({ method: 'tools/call', params: { name: 'handoff', arguments: { to: worker.id, title: 'follow me' }, task: { ttl: 600_000 } } }, CreateTaskResultSchema);
    const taskId = made.task.taskId;
    await first.transport.terminateSession();
    await first.client.close();

    // The worker does it through the client library while no session follows it.
    const held = await worker.client.claim(taskId, { start: true });
    await worker.client.complete(taskId, held.claim_token!, { status: 'success', summary: 'followed' });

    const second = await host(lead);
    await eventually(async () => (await second.client.experimental.tasks.getTask(taskId)).status === 'completed', 30_000, 'the task seen done by the new session');
    const result = await second.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(JSON.stringify(result)).toContain('followed');
  }, 60_000);

  it('serves MCP 2026-07-28 on the same endpoint: stateless, the agent of each request\'s token, the tasks extension across requests', async () => {
    const [lead, worker] = await Promise.all([newAgent('http-modern-lead'), newAgent('http-modern-worker')]);
    const client = new ModernClient({ name: 'baton-http-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${lead.token}` } } }));
    clients.push(client as unknown as Client);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerCapabilities()?.extensions).toMatchObject({ 'io.modelcontextprotocol/tasks': {} });
    expect(text(await client.callTool({ name: 'status', arguments: {} }))).toContain(lead.id);

    // A listen stream over HTTP hears of the lead's inbox only: another agent's work is not its news.
    const updated: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', async (n) => { updated.push(String(n.params.uri)); });
    const listening = await client.listen({ resourceSubscriptions: ['baton://inbox'] });
    // Another agent listening on the same server, for the same URI: the lead's news is not told to it.
    const bystander = await newAgent('http-modern-bystander');
    const other = new ModernClient({ name: 'baton-http-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await other.connect(new ModernTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${bystander.token}` } } }));
    clients.push(other as unknown as Client);
    const toldOther: string[] = [];
    other.setNotificationHandler('notifications/resources/updated', async (n) => { toldOther.push(String(n.params.uri)); });
    const otherListening = await other.listen({ resourceSubscriptions: ['baton://inbox'] });
    await worker.client.handoff({ to: lead.id, title: 'for the lead' });
    await eventually(async () => updated.includes('baton://inbox'), 30_000, 'the lead told that its inbox changed');
    expect(toldOther).toEqual([]);
    await otherListening.close();
    const inbox = await client.readResource({ uri: 'baton://inbox' });
    expect(String((inbox.contents[0] as { text: string }).text)).toContain('for the lead');
    await listening.close();

    // A wrong token and an expired one: 401 before anything is served, as in the 2025 eras.
    for (const token of ['not-a-token', await admin.issueToken(lead.id, new Date(Date.now() - 60_000))]) {
      const refused = new ModernClient({ name: 'baton-http-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      const err = await refused.connect(new ModernTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(SdkHttpError);
      expect((err as SdkHttpError).status).toBe(401);
    }

    // The extension's methods, with the headers 2026-07-28 asks (Mcp-Method, and Mcp-Name: the task's id).
    const call = async (method: string, params: Record<string, unknown>, name?: string) => {
      const answer = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${lead.token}`,
          'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'wire-host', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        } } }),
      });
      expect(answer.status, await answer.clone().text()).toBe(200);
      const body = answer.headers.get('content-type')?.includes('text/event-stream')
        ? JSON.parse(/^data: (.*)$/m.exec(await answer.text())![1]!)
        : await answer.json();
      return body.result as Record<string, unknown>;
    };
    const created = await call('tools/call', { name: 'handoff', arguments: { to: worker.id, title: 'followed over HTTP', follow: true } }, 'handoff');
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = String(created.taskId);
    const held = await worker.client.claim(taskId, { start: true });
    await worker.client.complete(taskId, held.claim_token!, { status: 'success', summary: 'done over HTTP' });
    const done = await call('tasks/get', { taskId }, taskId);
    expect(done).toMatchObject({ status: 'completed', result: { content: [expect.objectContaining({ text: expect.stringContaining('done over HTTP') })] } });
  }, 60_000);
});
