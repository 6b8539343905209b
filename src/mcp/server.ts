/**
 * Baton as a Model Context Protocol server: every agent action as a typed tool, the inbox and tasks as
 * resources a host can subscribe to, and a prompt that walks a model through the protocol's loop. The
 * server acts as one agent (the token in its environment), exactly like the CLI; the database decides
 * what that agent may do, and a refusal comes back as a tool error with its code and hint so that the
 * model can correct itself.
 *
 * Claim tokens never reach the model: the server remembers the token of each task its agent claims
 * (and reads it from the task, which only its holder sees, when it claimed in an earlier session).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { agentTopics, PushListener } from '../agent/push.js';
import type { BatonClient } from '../client/agent.js';
import { silentLogger, type Logger } from '../logger.js';
import { INBOX_URI, registerResources, TASKS_URI, watchResources, type Subscriptions } from './resources.js';
import { McpAgent } from './shared.js';
import { BatonTaskStore, TaskWakeups, toMcpTask, WakingMessageQueue } from './tasks.js';
import { registerTools } from './tools.js';
import { guardTaskCalls } from './task-calls.js';
import { createModernMcp, type ModernMcp } from './modern.js';

export { INBOX_URI, TASKS_URI } from './resources.js';

export interface McpOptions {
  /** Name and version the server gives the host. */
  version: string;
  log?: Logger;
  /** Listen for work on the push channel (where the project has one). Default true. */
  push?: boolean;
  /** How often subscribed resources are re-read when nothing is pushed (seconds). Default 30, or 5 without push. */
  pollSeconds?: number;
  /** How often the agent says it is alive while the server runs (seconds). Default 60. */
  beatSeconds?: number;
  /** Whether `complete` may read artifacts from paths on this machine. Default true. */
  allowPaths?: boolean;
}

export interface BatonMcp {
  /** The agent it acts as. */
  agentId: string;
  /** The 2025 eras' server (SDK 1.x, with 2025-11-25's tasks). */
  server: McpServer;
  /** A 2026-07-28 server acting as the same agent (SDK 2.x): one per stdio connection, or per HTTP request. It offers subscriptions. */
  modern(): ModernMcp;
  /**
   * Watches the agent's inbox and open tasks as the 2025 eras' subscriptions are watched, and tells
   * `notify` of each that changed: for 2026-07-28's subscriptions/listen streams, which the SDK keeps
   * (on stdio the connection's server, over HTTP the agent's handler).
   */
  watch(notify: (uri: string) => Promise<void>): void;
  /** Starts listening and beating; call once the transport is connected. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createBatonMcp(client: BatonClient, options: McpOptions): BatonMcp {
  const log = options.log ?? silentLogger;
  const agent = new McpAgent(client, log, options.allowPaths ?? true);
  const { server, subscribed, tell } = legacyServer(agent, options.version, log);
  const watchers: Subscriptions[] = [subscribed];
  const check = async () => { await Promise.all(watchers.map((w) => w.check())); };

  let push: PushListener | undefined;
  let poll: NodeJS.Timeout | undefined;
  let beat: NodeJS.Timeout | undefined;
  const pollEvery = (seconds: number) => {
    clearInterval(poll);
    poll = setInterval(() => { if (watchers.some((w) => w.size)) void check(); }, seconds * 1000);
  };

  return {
    agentId: client.agentId,
    server,
    modern: () => createModernMcp(agent, { version: options.version, instructions: instructionsFor(client.agentId) }),
    watch(notify) {
      const watched = watchResources(agent, (uri) => notify(uri).catch((err: unknown) => log.debug({ err, uri }, 'no stream to tell of a change')));
      void Promise.all([watched.add(INBOX_URI), watched.add(TASKS_URI)]).then(() => watchers.push(watched), (err: unknown) => log.warn({ err }, 'could not read the inbox and tasks to watch'));
    },
    async start() {
      const me = await client.heartbeat('working through MCP');
      const beatEvery = (options.beatSeconds ?? 60) * 1000;
      beat = setInterval(() => void client.heartbeat().catch((err) => log.warn({ err }, 'heartbeat failed')), beatEvery);
      if (options.push ?? true) {
        push = new PushListener(client.db, agentTopics(me), {
          work: () => void check(),
          news: (tasks) => {
            void check();
            void tell(tasks).catch((err: unknown) => log.warn({ err }, 'could not tell the host of a task\'s change'));
          },
          up: () => void check(),
        }, log);
        push.start();
      }
      pollEvery(options.pollSeconds ?? ((options.push ?? true) ? 30 : 5));
    },
    async stop() {
      clearInterval(poll);
      clearInterval(beat);
      await push?.stop();
      await client.heartbeat(undefined, { active: false }).catch(() => undefined);
      await server.close();
    },
  };
}

/**
 * The 2025 eras' server (SDK 1.x): the tools, the resources with their subscriptions, and 2025-11-25's
 * tasks over Baton's own; `tell` says to the host the pushed changes of the tasks it follows.
 */
function legacyServer(agent: McpAgent, version: string, log: Logger) {
  const { client } = agent;
  const taskStore = new BatonTaskStore(agent);
  const wakeups = new TaskWakeups((task, why) => (why ? log.debug({ task, why }, 'tasks/result looks again') : log.debug({ task }, 'tasks/result waits for a change')));
  const server = new McpServer(
    { name: 'baton', title: `Baton (agent ${client.agentId})`, version },
    {
      capabilities: {
        resources: { subscribe: true, listChanged: true }, tools: {}, prompts: {}, logging: {},
        // Hand-offs as MCP tasks, kept in Baton's database (tasks.ts).
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      taskStore,
      taskMessageQueue: new WakingMessageQueue(wakeups),
      instructions: instructionsFor(client.agentId),
    },
  );

  taskStore.server = server.server;
  logHost(server, log);
  // The MCP tasks this server has handed out or been asked about: their changes of status go to the
  // host as they are pushed.
  const tracked = new Set<string>();
  taskStore.onRead = (id) => tracked.add(id);
  taskStore.onChange = (id) => wakeups.wake(id, 'answered here');
  wakeTaskResults(server, wakeups);
  registerTools(server, agent, tracked);
  guardTaskCalls(server);
  const subscribed = registerResources(server, agent);
  const tell = async (pushed: Array<{ id: string }>) => {
    const ours = pushed.map((t) => t.id).filter((id) => tracked.has(id));
    if (!ours.length) return;
    for (const id of ours) wakeups.wake(id, 'pushed');
    for (const task of await client.getTasks(ours)) {
      await server.server.notification({ method: 'notifications/tasks/status', params: toMcpTask(task) });
    }
  };
  return { server, subscribed, tell };
}

/** What the server tells the host's model of itself, in either era. */
const instructionsFor = (agentId: string) => `You act as the Baton agent "${agentId}". Baton passes work between agents: tasks are handed off, `
  + 'claimed, worked on with progress, and completed with a structured result and artifacts. Start with the status tool, '
  + 'then inbox and list_tasks; name tasks by id or its first 6 characters. The baton-loop prompt walks through the protocol.';

/**
 * The SDK's tasks/result looks at a task once per poll interval while it is open; Baton's looks again as
 * soon as the task changes (by push, or by an answer given here) or a question is queued for the host,
 * so an accepted answer or a result reaches the host without waiting out the interval.
 */
function wakeTaskResults(server: McpServer, wakeups: TaskWakeups): void {
  type Internals = { _waitForTaskUpdate(taskId: string, signal: AbortSignal, sessionId?: string): Promise<void> };
  const protocol = server.server as unknown as Internals;
  const sleep = protocol._waitForTaskUpdate.bind(server.server);
  protocol._waitForTaskUpdate = (taskId, signal, sessionId) => wakeups.until(taskId, sleep(taskId, signal, sessionId));
}

/** Which host connected, the protocol it asked for and what of MCP it speaks: the first thing to read when a host behaves oddly. */
function logHost(server: McpServer, log: Logger): void {
  type Internals = { _oninitialize(request: { params: { protocolVersion: string } }): Promise<unknown> };
  const protocol = server.server as unknown as Internals;
  const initialize = protocol._oninitialize.bind(server.server);
  let asked = '';
  protocol._oninitialize = (request) => {
    asked = request.params.protocolVersion;
    return initialize(request);
  };
  server.server.oninitialized = () => log.info({ host: server.server.getClientVersion(), protocol: asked, capabilities: server.server.getClientCapabilities() }, 'host connected');
}
