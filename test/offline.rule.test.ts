/**
 * One rule at every door: work handed to an agent that is offline is queued for it (the database's
 * default), whether it comes through the CLI, MCP, A2A, the protocol's scripts, an executor's
 * `ctx.handoff` or the client; each door that lets a caller ask for a refusal refuses it alike (BT011).
 */
import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Role, type SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2AServer, type A2AServer } from '../src/a2a/server.js';
import { silentLogger } from '../src/logger.js';
import { cliAs, cliPath, parsed } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { admin, newAgent, stack, type TestAgent } from './helpers.js';
import { agentKey, agentKeyEnv } from './keys-mode.js';

const scripts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'agentcomms');

let a2a: A2AServer;
let mcp: Client;
let sender: TestAgent;
let away: TestAgent;

beforeAll(async () => {
  [sender, away] = await Promise.all([newAgent('offline-sender'), newAgent('offline-away')]); // away: registered, never heard from
  a2a = await startA2AServer({ url: stack.SUPABASE_URL, ...agentKey(stack), directory: admin.db, log: silentLogger });
  mcp = new Client({ name: 'offline-rule-host', version: '1.0.0' });
  await mcp.connect(new StdioClientTransport({
    command: process.execPath, args: [cliPath, 'mcp'], stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: sender.token, LOG_LEVEL: 'warn' },
  }));
});
afterAll(async () => {
  await mcp?.close();
  await a2a?.close();
});

const tool = async (args: Record<string, unknown>) => (await mcp.callTool({ name: 'handoff', arguments: { to: away.id, ...args } })) as CallToolResult;

function protocolScript(title: string): Promise<string> {
  return new Promise((resolve, reject) => execFile(path.join(scripts, 'handoff.sh'), [away.id, title], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: sender.token },
    timeout: 60_000,
  }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout))));
}

async function overA2A(title: string): Promise<string> {
  const client = await new ClientFactory().createFromUrl(`${a2a.url}/agents/${away.id}/`);
  const request: SendMessageRequest = {
    tenant: '',
    message: {
      messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, extensions: [], metadata: {}, referenceTaskIds: [],
      parts: [{ content: { $case: 'text', value: title }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    },
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
    metadata: {},
  };
  return ((await client.sendMessage(request, { serviceParameters: { Authorization: `Bearer ${sender.token}` } })) as { id: string }).id;
}

describe('a hand-off to an agent that is offline', () => {
  it('is queued for it through every surface, and says so where a person reads it', async () => {
    const cli = cliAs(sender.token, stack);
    const said = await cli('handoff', away.id, 'through the CLI');
    expect(said.code, said.stderr).toBe(0);
    expect(said.stdout).toContain(`${away.id} is offline; the task waits until it comes back`);
    const viaCli = /([0-9a-f]{8}-[0-9a-f-]{27})/.exec(said.stdout)?.[1] ?? parsed<{ id: string }>(await cli('handoff', away.id, 'through the CLI, as JSON', '--json')).id;

    const viaMcp = await tool({ title: 'through MCP' });
    expect(viaMcp.isError, JSON.stringify(viaMcp.content)).toBeFalsy();
    expect((viaMcp.content[0] as { text: string }).text).toContain(`${away.id} is offline`);

    const viaScript = /([0-9a-f-]{36})/.exec(await protocolScript('through the protocol\'s script'))![1]!;
    const viaA2a = await overA2A('through A2A');
    const viaClient = await sender.client.handoff({ to: away.id, title: 'through the client' });

    // An executor's ctx.handoff, in a daemon of the sender's.
    const lead = await newAgent('offline-lead');
    let viaExecutor: string | undefined;
    await daemon(lead, { executors: { '*': async (_t, ctx) => { viaExecutor = (await ctx.handoff({ to: away.id, title: 'through ctx.handoff' })).id; return { status: 'success', summary: 'passed on' }; } } });
    await sender.client.handoff({ to: lead.id, title: 'pass it on', allowOffline: true });
    await eventually(async () => viaExecutor, 60_000, 'the executor to hand off');

    const ids = [viaCli, (viaMcp.structuredContent as { task: { id: string } }).task.id, viaScript, viaA2a, viaClient.id, viaExecutor!];
    const tasks = await Promise.all(ids.map((id) => away.client.getTask(id)));
    expect(tasks.map((t) => [t.title, t.status, t.to_agent])).toEqual(tasks.map((t) => [t.title, 'pending', away.id]));
  });

  it('is refused alike (BT011) wherever the caller asks for a refusal', async () => {
    const before = (await sender.client.listTasks({ box: 'sent', limit: 1000 })).length;
    const cli = await cliAs(sender.token, stack)('handoff', away.id, 'refused by the CLI', '--online-only');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/BT011|is offline/);
    const viaMcp = await tool({ title: 'refused by MCP', allow_offline: false });
    expect(viaMcp.isError).toBe(true);
    expect((viaMcp.structuredContent as { error: { code: string } }).error.code).toBe('BT011');
    await expect(sender.client.handoff({ to: away.id, title: 'refused by the client', allowOffline: false })).rejects.toMatchObject({ code: 'BT011' });
    expect((await sender.client.listTasks({ box: 'sent', limit: 1000 })).length).toBe(before);
  });
});
