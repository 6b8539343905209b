/**
 * Baton's MCP server as MCP 2026-07-28 has it, on the SDK's 2.x line (`@modelcontextprotocol/server`):
 * stateless requests, each carrying its protocol version and the client's capabilities in `_meta`;
 * `server/discover`; `traceparent` from `_meta` continuing Baton's trace; the tasks extension
 * (`io.modelcontextprotocol/tasks`) for the calls whose work outlives them; and `input_required` results
 * where a question of the awaited task needs the person's answer.
 *
 * The same tools, resources and prompt as the 2025 eras' server (tools.ts, resources.ts), and the same
 * durable tasks: an MCP task is the Baton task its agent sent, read through the agent's token and
 * row-level security on every request, so a restarted `baton mcp`, or another one of the agent, answers
 * for it. The server decides which calls become tasks (the extension's rule): `wait_for` on a task the
 * agent sent, and a hand-off made with `follow: true`, for a client that declares the extension on that
 * request. For one that does not, the call waits (up to its timeout) and, when the task asks its
 * sender a question and the client takes elicitations, answers `input_required` with the question; the
 * retry brings the answer, which goes to Baton, and the wait goes on.
 *
 * The 2025 eras (2025-11-25 with its experimental tasks, 2025-06-18) stay on the SDK's 1.x line
 * (server.ts), whose tasks runtime the 2.x line dropped; stdio.ts and http.ts send each host to its era.
 */
import {
  McpServer, MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode, ResourceTemplate, inputRequired,
  type CallToolResult, type InputRequiredResult, type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { BatonError } from '../errors.js';
import { finalStatuses, type Task } from '../schemas.js';
import { registerReadables } from './resources.js';
import { logRefusal, refusal, type McpAgent } from './shared.js';
import { openQuestion, resultOf, TASK_POLL_MS, toMcpTask } from './tasks.js';
import { batonTools, callPlainly, traced, waitForTask, waitSecondsOf, type Tool } from './tools.js';

export const MODERN_PROTOCOL = '2026-07-28';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

type Meta = Record<string, unknown> | undefined;
interface Capabilities { extensions?: Record<string, unknown>; elicitation?: Record<string, unknown> }
const capabilitiesIn = (meta: Meta): Capabilities => (meta?.[CAPABILITIES] ?? {}) as Capabilities;
/** Whether the request declares the tasks extension: only then may it be answered with a task. */
export const takesTasks = (meta: Meta): boolean => Boolean(capabilitiesIn(meta).extensions?.[TASKS_EXTENSION]);
/** Whether the request's client takes form elicitations (an empty `elicitation` means form). */
const elicits = (meta: Meta): boolean => {
  const elicitation = capabilitiesIn(meta).elicitation;
  return elicitation !== undefined && (Object.keys(elicitation).length === 0 || 'form' in elicitation);
};

/**
 * Baton's statuses as the extension's. A task that failed or was rejected is `completed`, its result an
 * error (`isError`): the extension keeps `failed` for JSON-RPC errors, which a Baton task's end is not.
 */
const extensionStatus: Record<Task['status'], 'working' | 'input_required' | 'completed' | 'cancelled'> = {
  pending: 'working', claimed: 'working', in_progress: 'working', input_required: 'input_required',
  completed: 'completed', failed: 'completed', rejected: 'completed', cancelled: 'cancelled',
};

/** The key of a question among a task's input requests: its message's id, unique over the task's life. */
const questionKey = (messageId: string) => `question-${messageId}`;

/**
 * The extension's task for a Baton task: its handle, without its outcome. The 2025-11-25 task's fields
 * (tasks.ts) under the extension's names (ttlMs, pollIntervalMs), with the extension's status.
 */
function handleOf(agent: McpAgent, task: Task) {
  const { ttl, pollInterval, ...common } = toMcpTask(task, agent.refusedAnswers.get(task.id));
  return { ...common, status: extensionStatus[task.status], ttlMs: ttl, pollIntervalMs: pollInterval ?? TASK_POLL_MS };
}

export interface ModernOptions {
  version: string;
  instructions: string;
}

export type ModernMcp = McpServer;

/** A 2026-07-28 server acting as the agent: one per stdio connection, or one per HTTP request. */
export function createModernMcp(agent: McpAgent, options: ModernOptions): ModernMcp {
  const server = new McpServer(
    { name: 'baton', title: `Baton (agent ${agent.client.agentId})`, version: options.version },
    {
      // Resource subscriptions are subscriptions/listen streams, which the SDK keeps (the watching: server.ts).
      capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, extensions: { [TASKS_EXTENSION]: {} } },
      instructions: options.instructions,
    },
  );
  for (const tool of batonTools(agent)) {
    server.registerTool(tool.name, {
      title: tool.title, description: tool.description, inputSchema: z.object(tool.input),
      annotations: { openWorldHint: false, ...tool.annotations },
    }, (async (args: never, ctx: ServerContext) => traced(ctx.mcpReq._meta, () => call(agent, tool, args, ctx))) as never);
  }
  registerReadables(server, agent, (uri) => new ResourceTemplate(uri, { list: undefined }));
  registerTaskMethods(server, agent);
  return server;
}

/**
 * A tool call in this era: plain, or for a call whose work outlives it, a task (when the request takes
 * them) or a wait that puts the task's question to the person (input_required) and goes on with the
 * answer the retry brings. The retry names the task it follows in its requestState, so a hand-off is
 * made once however many rounds the call takes.
 */
async function call(agent: McpAgent, tool: Tool, args: never, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> {
  if (!tool.task || !tool.follows?.(args)) return callPlainly(agent, tool, args);
  // The envelope: the reserved _meta keys (protocol version, client capabilities), which the SDK lifts out of _meta.
  const meta = ctx.mcpReq.envelope as Meta;
  try {
    const state = followedBefore(ctx.mcpReq.requestState<unknown>());
    const followed = state ?? await tool.task(args);
    const task = await agent.client.getTask(followed);
    const mine = task.from_agent === agent.client.agentId;
    if (mine && takesTasks(meta) && !state && !finalStatuses.includes(task.status)) {
      return { resultType: 'task', ...handleOf(agent, task) } as never;
    }
    if (mine) await takeAnswers(agent, task, ctx.mcpReq.inputResponses);
    const ask = mine && elicits(meta) ? asker(agent, ctx.mcpReq.inputResponses) : undefined;
    return await waitForTask<InputRequiredResult>(agent, task.id, waitSecondsOf(args), ask);
  } catch (err) {
    logRefusal(agent.log, err, { tool: tool.name });
    return refusal(err);
  }
}

/** The task an earlier round of this call followed, from the requestState it gave (echoed as a string, unverified: the agent's token still decides what it may see). */
function followedBefore(state: unknown): string | undefined {
  let value = state;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  const task = (value as { task?: unknown } | null)?.task;
  return typeof task === 'string' ? task : undefined;
}

/**
 * What a wait asks of the person: the task's open question as an input request, unless this round
 * brought a response to it (an answer, taken before the wait; or a refusal, said once in the log).
 */
function asker(agent: McpAgent, responses: Record<string, unknown> | undefined): (task: Task) => Promise<InputRequiredResult | undefined> {
  const said = new Set<string>();
  return async (task) => {
    const question = await openQuestion(agent, task);
    if (!question) return undefined;
    const key = questionKey(question.id);
    const response = responses?.[key];
    if (response === undefined) {
      return inputRequired({
        inputRequests: { [key]: inputRequired.elicit({ message: question.form.message, requestedSchema: question.form.requestedSchema }) },
        requestState: JSON.stringify({ task: task.id }),
      });
    }
    // Declined or dismissed (`claude -p`, with nobody to ask, cancels): the question stays open, to answer with the answer tool.
    if (!Accepted.safeParse(response).success && !said.has(key)) {
      said.add(key);
      agent.log.info({ task: task.id, response }, 'the host did not answer the question');
    }
    return undefined;
  };
}

const Accepted = z.object({ action: z.literal('accept'), content: z.object({ answer: z.string().min(1) }) });

/**
 * The answer to the task's open question among the host's input responses, given to Baton in the
 * agent's name. Responses to any other key (an earlier question, one never asked) are passed over, as
 * the extension asks; an answer Baton refuses is said in the task's status message and the log.
 */
async function takeAnswers(agent: McpAgent, task: Task, responses: Record<string, unknown> | undefined): Promise<void> {
  if (!responses) return;
  const question = await openQuestion(agent, task);
  if (!question) return;
  const given = Accepted.safeParse(responses[questionKey(question.id)]);
  if (!given.success) return;
  try {
    await agent.client.answer(task.id, given.data.content.answer);
    agent.refusedAnswers.delete(task.id);
  } catch (err) {
    if (!(err instanceof BatonError)) throw err;
    agent.refusedAnswers.set(task.id, `your answer "${given.data.content.answer}" was not taken: ${err.message}`);
    agent.log.info({ err, task: task.id }, 'Baton refused the host\'s answer');
  }
}

const TaskParams = z.object({ taskId: z.string().min(1, 'params.taskId is the task\'s id') }).passthrough();

/** tasks/get, tasks/update and tasks/cancel, over the Baton tasks this agent sent. */
function registerTaskMethods(server: McpServer, agent: McpAgent): void {
  const own = async (method: string, taskId: string, meta: Meta): Promise<Task> => {
    if (!takesTasks(meta)) {
      throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        `${method} is the tasks extension's: declare ${TASKS_EXTENSION} in the request's client capabilities`);
    }
    const [task] = z.uuid().safeParse(taskId).success ? await agent.client.getTasks([taskId]) : [];
    if (!task || task.from_agent !== agent.client.agentId) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no task ${taskId} that agent "${agent.client.agentId}" sent: an MCP task here is a Baton task this agent sent`);
    }
    return task;
  };
  const protocol = server.server;
  protocol.setRequestHandler('tasks/get', { params: TaskParams }, async ({ taskId }, ctx) => {
    const task = await own('tasks/get', taskId, ctx.mcpReq.envelope as Meta);
    const handle = handleOf(agent, task);
    if (handle.status === 'completed') return { resultType: 'complete', ...handle, result: { resultType: 'complete', ...(await resultOf(agent, task)) } };
    if (handle.status === 'input_required') {
      const question = await openQuestion(agent, task);
      if (question) return { resultType: 'complete', ...handle, inputRequests: { [questionKey(question.id)]: { method: 'elicitation/create', params: question.form } } };
      // Waiting on an answer this host cannot give here (none asked in the thread): working, as it says.
      return { resultType: 'complete', ...handle, status: 'working' };
    }
    return { resultType: 'complete', ...handle };
  });
  // The SDK lifts inputResponses out of the params (MRTR's wire material), as it does for a retried call.
  protocol.setRequestHandler('tasks/update', { params: TaskParams }, async ({ taskId }, ctx) => {
    await takeAnswers(agent, await own('tasks/update', taskId, ctx.mcpReq.envelope as Meta), ctx.mcpReq.inputResponses);
    return { resultType: 'complete' };
  });
  protocol.setRequestHandler('tasks/cancel', { params: TaskParams }, async ({ taskId }, ctx) => {
    const task = await own('tasks/cancel', taskId, ctx.mcpReq.envelope as Meta);
    // Cooperative, as the extension has it: a task that ended meanwhile keeps its end.
    if (!finalStatuses.includes(task.status)) {
      try {
        await agent.client.cancel(task.id, 'cancelled by the MCP host');
      } catch (err) {
        const now = await agent.client.getTask(task.id);
        if (!finalStatuses.includes(now.status)) throw err;
      }
    }
    return { resultType: 'complete' };
  });
}
