/**
 * The inbox, the open tasks, a task and an artifact as MCP resources, the loop prompt, and
 * subscriptions: a subscribed resource is re-read when push says something happened (or on a slow
 * poll), and the host is told only when what it shows changed.
 */
import crypto from 'node:crypto';
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { loopPrompt } from './prompt.js';
import { rerunning } from '../rerun.js';
import { openStatuses } from '../schemas.js';
import { forModel, isTextual, type McpAgent } from './shared.js';

export const INBOX_URI = 'baton://inbox';
export const TASKS_URI = 'baton://tasks';

export interface Subscriptions {
  /** Re-reads every subscribed resource and tells the host of those that changed. */
  check(): Promise<void>;
  /** How many resources the host subscribed to. */
  readonly size: number;
}

const json = (uri: string, value: unknown): ReadResourceResult => ({ contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] });

/** Tasks waiting for the agent and its unread messages. */
async function readInbox({ client }: McpAgent) {
  const [waiting, messages] = await Promise.all([
    client.listTasks({ box: 'mine', status: ['pending'], limit: 100 }),
    client.messages({ unread: true, limit: 100 }),
  ]);
  return { waiting: waiting.map(forModel), unread: messages };
}

/** The agent's open tasks, and those it sent. */
async function readTasks(agent: McpAgent) {
  const [mine, sent] = await Promise.all([
    agent.client.listTasks({ box: 'mine', status: [...openStatuses], limit: 200 }),
    agent.client.listTasks({ box: 'sent', status: [...openStatuses], limit: 200 }),
  ]);
  agent.remember(mine);
  return { mine: mine.map(forModel), sent: sent.map(forModel) };
}

/** What a subscribed resource holds now, read as it is served. */
async function readFor(agent: McpAgent, uri: string): Promise<unknown> {
  if (uri === INBOX_URI) return readInbox(agent);
  if (uri === TASKS_URI) return readTasks(agent);
  const id = uri.match(/^baton:\/\/task\/(.+)$/)?.[1];
  if (id) return agent.showTask(await agent.resolve(id));
  return undefined;
}

/** What both SDK lines' servers share for resources and prompts: the same calls, each with its own template class. */
export interface ResourceHost {
  registerResource(...args: never[]): unknown;
  registerPrompt(...args: never[]): unknown;
}

/** The resources (inbox, open tasks, a task, an artifact), the loop prompt, and subscriptions to them (the 2025 eras' resources/subscribe). */
export function registerResources(server: McpServer, agent: McpAgent): Subscriptions {
  registerReadables(server, agent, (uri) => new ResourceTemplate(uri, { list: undefined }));
  return subscriptions(server, agent);
}

/** The resources and the loop prompt on a server of either SDK line; `template` makes that line's URI template. */
export function registerReadables(host: ResourceHost, agent: McpAgent, template: (uri: string) => unknown): void {
  const { client } = agent;
  const server = host as unknown as McpServer;

  server.registerResource('inbox', INBOX_URI, {
    title: 'Inbox', mimeType: 'application/json',
    description: 'Tasks waiting for you and unread messages to you. Subscribe to hear when work or a message arrives.',
  }, async (uri) => json(uri.href, await readInbox(agent)));
  server.registerResource('tasks', TASKS_URI, {
    title: 'Open tasks', mimeType: 'application/json',
    description: 'Your open tasks: addressed to you or held by you, and the ones you sent. Subscribe to hear when one changes.',
  }, async (uri) => json(uri.href, await readTasks(agent)));
  server.registerResource('task', template('baton://task/{id}') as ResourceTemplate, {
    title: 'A task', mimeType: 'application/json', description: 'One task with its history, thread and artifacts.',
  }, async (uri, { id }) => json(uri.href, await agent.showTask(await agent.resolve(String(id)))));
  server.registerResource('artifact', template('baton://artifact/{task}/{name}') as ResourceTemplate, {
    title: 'An artifact', description: 'An artifact\'s content, by task and name.',
  }, async (uri, { task, name }) => {
    const artifact = await client.artifact(await agent.resolve(String(task)), decodeURIComponent(String(name)));
    if (!artifact.content) return { contents: [{ uri: uri.href, mimeType: 'text/uri-list', text: artifact.uri ?? '' }] };
    return isTextual(artifact.media_type, artifact.content)
      ? { contents: [{ uri: uri.href, mimeType: artifact.media_type, text: artifact.text() }] }
      : { contents: [{ uri: uri.href, mimeType: artifact.media_type, blob: artifact.content.toString('base64') }] };
  });

  server.registerPrompt('baton-loop', {
    title: 'Work as a Baton agent',
    description: 'Walks you through the protocol\'s loop: check the inbox, claim, work with progress, complete with artifacts, or ask, reject or fail with a reason.',
    argsSchema: { focus: z.string().optional().describe('What to concentrate on, e.g. a capability or a task id.') },
  }, ({ focus }) => ({ messages: [{ role: 'user', content: { type: 'text', text: loopPrompt(client.agentId, focus) } }] }));
}

/** Subscriptions: what is subscribed is read again when work is pushed (or on a slow poll), and the host told when it changed. */
function subscriptions(server: McpServer, agent: McpAgent): Subscriptions {
  const watched = watchResources(agent, (uri) => server.server.sendResourceUpdated({ uri }));
  server.server.setRequestHandler(SubscribeRequestSchema, async ({ params }) => {
    await watched.add(params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async ({ params }) => {
    watched.delete(params.uri);
    return {};
  });
  return watched;
}

/** Resources watched for a host: each read again on `check`, and `notify` told of those whose content changed. */
export function watchResources(agent: McpAgent, notify: (uri: string) => Promise<void>): Subscriptions & { add(uri: string): Promise<void>; delete(uri: string): void } {
  const subscribed = new Map<string, string | undefined>(); // uri → digest of what it last read
  const digest = (value: unknown) => crypto.createHash('sha256').update(JSON.stringify(value)).digest('hex');
  const check = rerunning(async () => {
    for (const [uri, before] of subscribed) {
      try {
        const now = digest(await readFor(agent, uri));
        if (subscribed.has(uri) && now !== before) {
          subscribed.set(uri, now);
          await notify(uri);
        }
      } catch (err) {
        agent.log.warn({ err, uri }, 'could not re-read a subscribed resource');
      }
    }
  });
  return {
    check,
    get size() { return subscribed.size; },
    async add(uri) { subscribed.set(uri, digest(await readFor(agent, uri))); },
    delete(uri) { subscribed.delete(uri); },
  };
}
