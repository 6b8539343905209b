/** Every agent action as an MCP tool: one definition each (name, description, input schema from the client's zod schemas, call). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CreateTaskRequestHandlerExtra, TaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { context } from '@opentelemetry/api';
import { z } from 'zod';
import { broughtBackWith } from '../client/agent.js';
import { handoffInput, queuedNote } from '../client/handoff-words.js';
import { BudgetInput, ExpectedOutput, finalStatuses, HandoffInput, JsonObject, openStatuses, TaskPriority, TaskStatus, type Task, type TaskResult } from '../schemas.js';
import { contextOfTask } from '../telemetry/tracing.js';
import { lineageTree, messageText, shortId } from '../text/render.js';
import { ownTask, resultOf, TASK_POLL_MS } from './tasks.js';
import { ArtifactGiven, forModel, isTextual, ok, readGiven, logRefusal, reason, refusal, taskLine, taskRef, type McpAgent } from './shared.js';
import { refusedTask } from './task-calls.js';

/** One MCP tool: its name, what it says, its input schema, and its call. */
export interface Tool<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: S;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  run(args: z.infer<z.ZodObject<S>>): Promise<CallToolResult>;
  /**
   * For a tool whose work outlives the call: what it does when the host asks for a task, answering with
   * the Baton task to follow (MCP's task is that task). A plain call still answers with `run`.
   */
  task?(args: z.infer<z.ZodObject<S>>): Promise<string>;
  /**
   * Whether this call's work outlives the call, where the server decides (MCP 2026-07-28's tasks
   * extension): the call becomes a task for a host that takes them, and a plain call waits for its end
   * as wait_for does. Default: never.
   */
  follows?(args: z.infer<z.ZodObject<S>>): boolean;
}

type PlainCall = (args: never, extra?: { _meta?: Record<string, unknown> }) => Promise<CallToolResult>;

/** The task a tool's plain answer names (the hand-off it made), for the tools whose task call does the same. */
const followed = (pick: (structured: Record<string, unknown>) => unknown) => (run: Tool['run']) => async (args: never): Promise<string> => {
  const answer = await run(args);
  if (answer.isError) throw new Error(answer.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'));
  return String(pick(answer.structuredContent ?? {}));
};
const madeTask = followed((s) => (s.task as { id: string }).id);

/** A tool, its call typed by its input schema. */
const defineTool = <S extends z.ZodRawShape>(tool: Tool<S>): Tool => tool as unknown as Tool;

/** A call on a task the agent holds, made with the claim token it holds it under. */
function withClaim(agent: McpAgent, verb: string, act: (id: string, token: string) => Promise<Task>) {
  return async ({ task }: { task: string }): Promise<CallToolResult> => {
    const id = await agent.resolve(task);
    const done = await act(id, await agent.claimTokenOf(id));
    if (done.status === 'pending' || finalStatuses.includes(done.status)) agent.forget(id);
    return ok(`${verb} ${taskLine(done)}`, { task: forModel(done) });
  };
}

/** Every tool, as both eras' servers register it. */
export function batonTools(agent: McpAgent): Tool[] {
  return [whoIsAround, handingWorkOn, seeingWork, claimingWork, reportingWork, waiting, sendersWork, messagesAndArtifacts].flatMap((group) => group(agent));
}

/**
 * A host that traces says its context in the call's _meta (traceparent, tracestate, in either era): the
 * tool's requests continue it, and a hand-off records it.
 */
export function traced<T>(meta: Record<string, unknown> | undefined, work: () => Promise<T>): Promise<T> {
  const parent = typeof meta?.traceparent === 'string'
    ? contextOfTask({ traceparent: meta.traceparent, tracestate: typeof meta.tracestate === 'string' ? meta.tracestate : null })
    : context.active();
  return context.with(parent, work);
}

/**
 * A tool's plain call, as either era makes it: its answer, or its refusal as a tool error. A call that
 * follows its task (follow: true), made by a host that takes no tasks, hands off and then waits for the
 * end as wait_for does.
 */
export async function callPlainly(agent: McpAgent, tool: Tool, args: never): Promise<CallToolResult> {
  try {
    if (tool.task && tool.follows?.(args)) return await waitForTask(agent, await tool.task(args), waitSecondsOf(args));
    return await tool.run(args);
  } catch (err) {
    logRefusal(agent.log, err, { tool: tool.name });
    return refusal(err);
  }
}

/** How long a plain wait_for (or a followed hand-off) waits by default: within most hosts' request timeout. */
export const DEFAULT_WAIT_SECONDS = 50;

/** How long a call that follows its task waits: wait_for's timeout_seconds, else the default. */
export const waitSecondsOf = (args: unknown): number => (args as { timeout_seconds?: number }).timeout_seconds ?? DEFAULT_WAIT_SECONDS;

/**
 * Waits for a task to end, up to the timeout: its result and artifacts, or where it stands. `ask` is
 * told of a question the task waits on, and may end the wait with what it answers (MCP 2026-07-28's
 * input_required, for the task's sender).
 */
export async function waitForTask<R = CallToolResult>(agent: McpAgent, id: string, timeoutSeconds: number, ask?: (task: Task) => Promise<R | undefined>): Promise<CallToolResult | R> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const now = await agent.client.getTask(id);
    if (finalStatuses.includes(now.status)) return resultOf(agent, now);
    if (now.status === 'input_required' && ask) {
      const asked = await ask(now);
      if (asked !== undefined) return asked;
    }
    if (Date.now() >= deadline) return ok(`Still open: ${taskLine(now)}${now.progress_message ? ` — ${now.progress_message}` : ''}`, { task: forModel(now) });
    await new Promise((resolve) => setTimeout(resolve, Math.min(TASK_POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}

/** The tools on a server of the 2025 eras (SDK 1.x), with MCP tasks as 2025-11-25 has them. */
export function registerTools(server: McpServer, agent: McpAgent, tracked: Set<string>): void {
  const plainCalls = new Map<string, PlainCall>();
  for (const tool of batonTools(agent)) {
    const config = { title: tool.title, description: tool.description, inputSchema: tool.input, annotations: { openWorldHint: false, ...tool.annotations } };
    const plain = async (args: never, extra?: { _meta?: Record<string, unknown> }) => traced(extra?._meta, () => callPlainly(agent, tool, args));
    if (!tool.task) {
      server.registerTool(tool.name, config, plain as never);
      continue;
    }
    const { task } = tool;
    plainCalls.set(tool.name, plain);
    server.experimental.tasks.registerToolTask(tool.name, { ...config, execution: { taskSupport: 'optional' } }, {
      createTask: (async (args: never, extra: CreateTaskRequestHandlerExtra) => traced(extra._meta, async () => {
        let made;
        try {
          const id = await task(args);
          made = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? null, pollInterval: TASK_POLL_MS, context: { batonTaskId: id } });
        } catch (err) {
          // The call answers with Baton's refusal (guardTaskCalls), not the SDK's complaint about its answer.
          logRefusal(agent.log, err, { tool: tool.name, asTask: true });
          const refused = refusal(err);
          const text = refused.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
          refusedTask(extra.requestId, { text, error: (refused.structuredContent as { error: { code: string; message: string; hint: string | null } }).error });
          throw new Error(text);
        }
        tracked.add(made.taskId);
        return { task: made };
      })) as never,
      getTask: (async (_args: never, extra: TaskRequestHandlerExtra) => extra.taskStore.getTask(extra.taskId)) as never,
      getTaskResult: (async (_args: never, extra: TaskRequestHandlerExtra) => extra.taskStore.getTaskResult(extra.taskId)) as never,
    });
  }
  keepPlainCalls(server, plainCalls);
}

/**
 * The SDK runs a tool whose task support is optional, called without a task, as a task that the call
 * waits out. Baton's answer plainly as they always have: a hand-off at once with its task, wait_for
 * within its timeout.
 */
function keepPlainCalls(server: McpServer, plainCalls: Map<string, PlainCall>): void {
  type Internals = {
    handleAutomaticTaskPolling(tool: unknown, request: { params: { name: string; arguments?: unknown } }, extra: { _meta?: Record<string, unknown> }): Promise<CallToolResult>;
    validateToolInput(tool: unknown, args: unknown, name: string): Promise<never>;
  };
  const sdk = server as unknown as Internals;
  const waitOut = sdk.handleAutomaticTaskPolling.bind(server);
  sdk.handleAutomaticTaskPolling = async (tool, request, extra) => {
    const plain = plainCalls.get(request.params.name);
    if (!plain) return waitOut(tool, request, extra);
    return plain(await sdk.validateToolInput(tool, request.params.arguments, request.params.name), extra);
  };
}

/** Who is around, and what is on this agent's plate. */
function whoIsAround(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'status',
      title: 'Say you are alive; see your plate',
      description: 'Records that you are alive (optionally with a status line others see in discover) and returns your agent profile '
      + 'with counts: tasks waiting for you, tasks you hold, tasks you sent that are still open, unread messages. Call it first.',
      input: { message: z.string().optional().describe('A status line for others, e.g. "reviewing PR 42".') },
      run: async ({ message }) => {
        const me = await client.heartbeat(message);
        const [mine, sent, unread] = await Promise.all([
          client.listTasks({ box: 'mine', status: [...openStatuses], limit: 500 }),
          client.listTasks({ box: 'sent', status: [...openStatuses], limit: 500 }),
          client.messages({ unread: true, limit: 500 }),
        ]);
        agent.remember(mine);
        const counts = {
          waiting_for_me: mine.filter((t) => t.status === 'pending').length,
          holding: mine.filter((t) => t.claimed_by === client.agentId).length,
          sent_open: sent.length,
          unread_messages: unread.length,
        };
        return ok(`You are ${me.id} (${me.capabilities.join(', ') || 'no capabilities'}). Waiting for you: ${counts.waiting_for_me}; `
          + `holding: ${counts.holding}; sent and open: ${counts.sent_open}; unread messages: ${counts.unread_messages}.`,
        { agent: me, ...counts });
      },
    }),
    defineTool({
      name: 'discover',
      title: 'Find agents',
      description: 'Lists the agents that are online (or all, with include_offline) and what they can do. Use it to choose whom to hand work to.',
      input: {
        capabilities: z.array(z.string()).optional().describe('Only agents holding all of these capabilities.'),
        include_offline: z.boolean().optional().describe('Include agents not heard from recently.'),
      },
      annotations: { readOnlyHint: true },
      run: async ({ capabilities, include_offline }) => {
        const agents = await client.discover({ capabilities, includeOffline: include_offline });
        const text = agents.length
          ? agents.map((a) => `${a.id}${a.is_online ? '' : ' (offline)'}: ${a.capabilities.join(', ') || '-'}${a.status_message ? ` — ${a.status_message}` : ''}`).join('\n')
          : 'No agents match.';
        return ok(text, { agents });
      },
    }),
  ];
}

/** Handing work on. */
function handingWorkOn(agent: McpAgent): Tool[] {
  const { client } = agent;
  const handoffShape = {
    title: HandoffInput.shape.title.min(1).describe('A short imperative title, e.g. "Review the slugify PR".'),
    description: HandoffInput.shape.description.describe('What to do, in as much detail as the receiver needs.'),
    payload: JsonObject.optional().describe('Structured input for the receiver (JSON object); task_type picks its executor.'),
    priority: TaskPriority.optional().describe('low, medium (the default), high or urgent.'),
    deadline: z.iso.datetime({ offset: true }).optional().describe('When it must be done by (ISO 8601); it is cancelled if still open then.'),
    expected_outputs: z.array(ExpectedOutput).optional()
      .describe('Artifacts the receiver must attach: [{name, media_type?, required?, json_schema?}]. Completing without a required one is refused.'),
    inputs: z.array(z.object({ task: taskRef, name: z.string().min(1) })).optional()
      .describe('Artifacts of earlier tasks the receiver works from, by task and name.'),
    parent: taskRef.optional().describe('The task this one is part of (a sub-task or follow-up); keeps the chain.'),
    max_attempts: HandoffInput.shape.maxAttempts.describe('How often it may be tried before it is dead-lettered.'),
    lease_seconds: HandoffInput.shape.leaseSeconds.describe('How long a claim holds unless the holder stays alive.'),
    idempotency_key: HandoffInput.shape.idempotencyKey.describe('Repeat a hand-off safely: the same key returns the same task.'),
    after: z.array(taskRef).max(100).optional()
      .describe('Tasks it waits for: not claimable until they complete; their results and artifacts become its inputs.'),
    after_any: z.boolean().optional().describe('With after: the first of them to complete releases it, and the others are cancelled.'),
    run_anyway: z.boolean().optional().describe('With after: run even if one of them fails (by default it is cancelled with the reason).'),
    run_at: z.iso.datetime({ offset: true }).optional().describe('Not claimable before this time (ISO 8601).'),
    budget: BudgetInput.optional()
      .describe('What it and everything under it may spend: {tokens?, usd?, onSpent?: "ask" | "fail"}; never more than is left above it (BT017).'),
  };
  type HandoffArgs = z.infer<z.ZodObject<typeof handoffShape>>;
  const requestOf = async (args: HandoffArgs): Promise<z.input<typeof HandoffInput>> => handoffInput({
    title: args.title,
    description: args.description,
    payload: args.payload,
    priority: args.priority,
    deadline: args.deadline,
    expected: args.expected_outputs,
    inputs: args.inputs ? await Promise.all(args.inputs.map(async (i) => ({ task_id: await agent.resolve(i.task), name: i.name }))) : undefined,
    parent: args.parent ? await agent.resolve(args.parent) : undefined,
    maxAttempts: args.max_attempts,
    leaseSeconds: args.lease_seconds,
    idempotencyKey: args.idempotency_key,
    after: args.after ? await Promise.all(args.after.map(agent.resolve)) : undefined,
    afterAny: args.after_any,
    runAnyway: args.run_anyway,
    runAt: args.run_at,
    budget: args.budget,
  });
  const handoff = async ({ to, capabilities, allow_offline, follow: _follow, ...args }: HandoffArgs & { to: string; capabilities?: string[]; allow_offline?: boolean; follow?: boolean }) => {
    // Queued for an agent that is offline unless the caller asks for a refusal: the database's default (handoff-words.ts).
    const task = await client.handoff({ ...(await requestOf(args)), to, requiredCapabilities: capabilities, allowOffline: allow_offline });
    const away = await queuedNote(client, task);
    return ok(`Handed to ${to}: ${taskLine(task)} (id ${task.id})${away ? `. ${away}.` : ''}`, { task: forModel(task) });
  };
  const broadcast = async ({ capabilities, follow: _follow, ...args }: HandoffArgs & { capabilities: string[]; follow?: boolean }) => {
    const task = await client.broadcast({ ...(await requestOf(args)), requiredCapabilities: capabilities });
    return ok(`Offered to any agent with ${capabilities.join(', ')}: ${taskLine(task)} (id ${task.id})`, { task: forModel(task) });
  };
  return [
    defineTool({
      name: 'handoff',
      title: 'Hand a task to an agent',
      description: 'Hands a task to one agent by id (see discover). Returns the new task; you hear of its progress and result in your inbox. '
      + 'Say what you expect back with expected_outputs. An agent that is offline gets the task when it comes back, as with baton handoff; '
      + 'set allow_offline to false to be refused instead.',
      input: { to: z.string().min(1).describe('The receiving agent\'s id.'), ...handoffShape,
        capabilities: z.array(z.string()).optional().describe('Capabilities the receiver must hold.'),
        allow_offline: z.boolean().optional().describe('Queue it if the agent is offline (default true; false: refused with BT011).'),
        follow: z.boolean().optional().describe('Follow it to its end: the call answers with its result (a host that takes MCP tasks follows it as a task; another waits up to 50 s, then follow it with wait_for).'), },
      run: handoff,
      task: madeTask(handoff),
      follows: (args) => args.follow === true,
    }),
    defineTool({
      name: 'broadcast',
      title: 'Offer a task to any capable agent',
      description: 'Offers a task to whichever online agent holding the capabilities claims it first. Use it when any qualified agent will do.',
      input: { capabilities: z.array(z.string().min(1)).min(1).describe('Capabilities the taker must hold, e.g. ["review"].'), ...handoffShape,
        follow: z.boolean().optional().describe('Follow it to its end: the call answers with its result (a host that takes MCP tasks follows it as a task; another waits up to 50 s, then follow it with wait_for).'), },
      run: broadcast,
      task: madeTask(broadcast),
      follows: (args) => args.follow === true,
    }),
  ];
}

/** Seeing work. */
function seeingWork(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'list_tasks',
      title: 'List tasks',
      description: 'Lists tasks: "mine" (addressed to or held by you, the default: the open ones unless status names others), '
      + '"sent" (by you), "claimable" (what you may claim now, as a claim decides it: due, for your capabilities, not declined) or "all" you can see.',
      input: {
        box: z.enum(['mine', 'sent', 'claimable', 'all']).optional(),
        status: z.array(TaskStatus).optional().describe('Only these statuses, e.g. ["completed","failed"] for what you finished.'),
        limit: z.number().int().min(1).max(500).optional(),
      },
      annotations: { readOnlyHint: true },
      run: async ({ box = 'mine', status, limit }) => {
        // Your own tasks default to the open ones, as `baton tasks` does: listed highest priority first,
        // then oldest, finished work would crowd them out, and finding it reads the whole table.
        const statuses = status ?? (box === 'mine' ? [...openStatuses] : undefined);
        const tasks = await client.listTasks({ box: box === 'claimable' ? 'pending' : box, status: statuses, limit });
        agent.remember(tasks);
        return ok(tasks.length ? tasks.map(taskLine).join('\n') : 'No tasks.', { tasks: tasks.map(forModel) });
      },
    }),
    defineTool({
      name: 'show_task',
      title: 'Show a task',
      description: 'Shows one task in full: its payload, expected outputs, result, history of status changes, its message thread, its artifacts, '
      + 'and the tasks it waited for with their results.',
      input: { task: taskRef },
      annotations: { readOnlyHint: true },
      run: async ({ task }) => {
        const shown = await agent.showTask(await agent.resolve(task));
        const text = [taskLine(shown.task as Task), shown.task.description ?? '',
          ...shown.thread.map((m) => `  ${m.from_agent}: ${messageText(m)}`),
          shown.artifacts.length ? `Artifacts: ${shown.artifacts.map((a) => a.name).join(', ')}` : ''].filter(Boolean).join('\n');
        return ok(text, shown);
      },
    }),
    defineTool({
      name: 'chain',
      title: 'Show a task\'s chain',
      description: 'Shows the whole chain a task belongs to: who handed what to whom, statuses, results and outputs, as a tree.',
      input: { task: taskRef },
      annotations: { readOnlyHint: true },
      run: async ({ task }) => {
        const rows = await client.chain(await agent.resolve(task));
        return ok(lineageTree(rows), { chain: rows });
      },
    }),
  ];
}

/** Claiming work, and the exchange with the sender while it runs. */
function claimingWork(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'claim',
      title: 'Claim a task',
      description: 'Claims a task and starts it (unless start is false): name it by id, or leave task out to claim the next one for you '
      + '(addressed to you first, then offers you can do). Claimed tasks are yours to work on, report progress on, and complete or fail.',
      input: {
        task: taskRef.optional(),
        capabilities: z.array(z.string()).optional().describe('Without task: only tasks requiring these capabilities.'),
        limit: z.number().int().min(1).max(50).optional().describe('Without task: claim up to this many (default 1).'),
        start: z.boolean().optional().describe('Start at once (default true); false leaves it claimed.'),
      },
      run: async ({ task, capabilities, limit, start = true }) => {
        const claimed = task ? [await client.claim(await agent.resolve(task), { start })] : await client.claimNext({ capabilities, limit: limit ?? 1, start });
        agent.remember(claimed);
        return ok(claimed.length ? claimed.map((t) => `Claimed ${taskLine(t)}`).join('\n') : 'Nothing to claim right now.',
          { tasks: claimed.map(forModel) });
      },
    }),
    defineTool({
      name: 'start',
      title: 'Start a claimed task',
      description: 'Starts a task you claimed with start: false.',
      input: { task: taskRef },
      run: (args) => withClaim(agent, 'Started', (id, token) => client.start(id, token))(args),
    }),
    defineTool({
      name: 'progress',
      title: 'Report progress',
      description: 'Tells the sender how far along you are on a task you hold; it keeps your claim alive.',
      input: { task: taskRef, message: z.string().min(1).describe('What you did or are doing.'), percent: z.number().int().min(0).max(100).optional() },
      run: async ({ task, message, percent }) => {
        const done = await client.progress(await agent.resolve(task), message, percent);
        return ok(`Progress on ${taskLine(done)}: ${message}`, { task: forModel(done) });
      },
    }),
    defineTool({
      name: 'ask',
      title: 'Ask the sender a question',
      description: 'Asks the sender of a task you hold a question; the task waits in input_required until they answer (you see it in your inbox).',
      input: { task: taskRef, question: z.string().min(1) },
      run: async ({ task, question }) => {
        const done = await client.ask(await agent.resolve(task), question);
        return ok(`Asked about ${taskLine(done)}`, { task: forModel(done) });
      },
    }),
    defineTool({
      name: 'answer',
      title: 'Answer a question',
      description: 'Answers the question on a task you sent; the task resumes.',
      input: { task: taskRef, answer: z.string().min(1) },
      run: async ({ task, answer }) => {
        const done = await client.answer(await agent.resolve(task), answer);
        return ok(`Answered ${taskLine(done)}`, { task: forModel(done) });
      },
    }),
  ];
}

/** Reporting how the work ended. */
function reportingWork(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'complete',
      title: 'Complete a task',
      description: 'Completes a task you hold, with a result and its artifacts. Attach every required expected output (show_task lists them); '
      + 'status "partial" says you did part of it. follow_up hands the next step to another agent in the same call.',
      input: {
        task: taskRef,
        summary: z.string().optional().describe('What you did and found, in a sentence or two.'),
        status: z.enum(['success', 'partial']).optional().describe('success (default) or partial.'),
        artifacts: z.array(ArtifactGiven).optional().describe('Files you produced: each by text, base64 or path.'),
        metrics: JsonObject.optional().describe('Numbers worth keeping, e.g. {"tests_passed": 12}.'),
        data: JsonObject.optional().describe('Any structured result beyond the summary.'),
        follow_up: z.object({
          to: z.string().optional().describe('The agent to hand the next step to.'),
          capability: z.string().optional().describe('Or: any agent with this capability.'),
          title: z.string().min(1),
          reason: z.string().optional(),
          payload: JsonObject.optional(),
          expected_outputs: z.array(ExpectedOutput).optional(),
        }).optional().describe('The next step, handed on with this task\'s outputs as its inputs.'),
      },
      annotations: { destructiveHint: false },
      run: async ({ task, summary, status = 'success', artifacts = [], metrics, data, follow_up }) => {
        const id = await agent.resolve(task);
        const token = await agent.claimTokenOf(id);
        const held = await client.getTask(id);
        for (const given of artifacts) {
          await client.attachArtifact(id, given.name, readGiven(given, agent.allowPaths), { mediaType: given.media_type, task: held });
        }
        const { to: followTo, ...followRest } = follow_up ?? { to: undefined };
        const result: TaskResult = {
          status, ...(summary === undefined ? {} : { summary }), ...(metrics ? { metrics } : {}), ...(data ? { data } : {}),
          ...(artifacts.length ? { artifacts: artifacts.map((a) => ({ name: a.name })) } : {}),
          ...(follow_up ? { handoff: { ...followRest, ...(followTo ? { to_agent: followTo } : {}) } } : {}),
        };
        const done = await client.complete(id, token, result);
        agent.forget(id);
        return ok(`Completed ${taskLine(done)}${artifacts.length ? ` with ${artifacts.map((a) => a.name).join(', ')}` : ''}`, { task: forModel(done) });
      },
    }),
    defineTool({
      name: 'fail',
      title: 'Fail a task',
      description: 'Reports that a task you hold failed, with the error. With retry, it goes back to pending while attempts remain.',
      input: { task: taskRef, error: z.string().min(1), retry: z.boolean().optional() },
      run: ({ task, error, retry }) => withClaim(agent, 'Failed', (id, token) => client.fail(id, token, error, { retry }))({ task }),
    }),
    defineTool({
      name: 'release',
      title: 'Give a task back',
      description: 'Gives a task you hold back to pending for someone else (the attempt does not count). Use it when you cannot do it now.',
      input: { task: taskRef, reason: z.string().optional() },
      run: ({ task, reason: why }) => withClaim(agent, 'Released', (id, token) => client.release(id, token, why))({ task }),
    }),
    defineTool({
      name: 'reject',
      title: 'Decline a task',
      description: 'Declines a pending task addressed to you, with the reason (e.g. outside your capabilities).',
      input: { task: taskRef, reason },
      run: async ({ task, reason: why }) => {
        const done = await client.reject(await agent.resolve(task), why);
        return ok(`Rejected ${taskLine(done)}`, { task: forModel(done) });
      },
    }),
  ];
}

/** Waiting for a task to end. */
function waiting(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'wait_for',
      title: 'Wait for a task to end',
      description: 'Waits for a task you can see to end (completed, failed, rejected or cancelled), up to timeout_seconds, and returns its '
      + 'result and artifacts; if it is still open then, says where it stands. Called as an MCP task, it answers at once with a task '
      + 'that follows it, which the host can poll, and whose questions come to you as they are asked.',
      input: {
        task: taskRef,
        timeout_seconds: z.number().int().min(0).max(3600).optional().describe('How long to wait (default 50 s, within most hosts\' request timeout).'),
      },
      annotations: { readOnlyHint: true },
      run: async (args) => waitForTask(agent, await agent.resolve(args.task), waitSecondsOf(args)),
      // Only a task the agent sent is its MCP task: the task store refuses any other (ownTask).
      task: async ({ task }) => agent.resolve(task),
      follows: () => true,
    }),
  ];
}

/** What the sender of a task may do with it. */
function sendersWork(agent: McpAgent): Tool[] {
  const { client } = agent;
  type Subtask = { title: string; to?: string; capabilities?: string[]; description?: string; payload?: z.infer<typeof JsonObject>; expected_outputs?: z.infer<typeof ExpectedOutput>[] };
  const fanOut = async ({ task, subtasks, join, judge_capability, join_title }: { task: string; subtasks: Subtask[]; join: 'first' | 'all' | 'judge'; judge_capability?: string; join_title?: string }) => {
    const made = await client.fanOut(await agent.resolve(task), subtasks.map((s) => ({
      title: s.title, to: s.to, requiredCapabilities: s.capabilities, description: s.description, payload: s.payload, expectedOutputs: s.expected_outputs,
    })), { mode: join, capability: judge_capability, title: join_title });
    return ok(`Handed off ${made.tasks.length} sub-task(s); the ${join} join is ${shortId(made.join)} (id ${made.join}).`, made);
  };
  return [
    defineTool({
      name: 'cancel',
      title: 'Withdraw a task you sent',
      description: 'Cancels a task you sent that is not final; its holder is told.',
      input: { task: taskRef, reason: z.string().optional() },
      annotations: { destructiveHint: true },
      run: async ({ task, reason: why }) => {
        const done = await client.cancel(await agent.resolve(task), why);
        return ok(`Cancelled ${taskLine(done)}`, { task: forModel(done) });
      },
    }),
    defineTool({
      name: 'reassign',
      title: 'Give a task you sent to another agent',
      description: 'Moves a task you sent to another agent (noted in its history).',
      input: { task: taskRef, to: z.string().min(1), reason: z.string().optional() },
      run: async ({ task, to, reason: why }) => {
        const done = await client.reassign(await agent.resolve(task), to, why);
        return ok(`Reassigned ${taskLine(done)} to ${to}`, { task: forModel(done) });
      },
    }),
    defineTool({
      name: 'retry',
      title: 'Retry a failed task you sent',
      description: 'Hands the work of a failed task you sent off again, as a new task linked to the old one (one open retry at a time). '
      + 'list_tasks with box "sent" and status ["failed"] shows your failed tasks.',
      input: { task: taskRef },
      run: async ({ task }) => {
        const again = await client.retry(await agent.resolve(task));
        const back = await broughtBackWith(client.db, again);
        return ok([
          `Retried as ${taskLine(again)} (id ${again.id})`,
          ...(back.length ? [`Brought back ${back.length} task(s) cancelled because it failed; they wait on it again: ${back.map((t) => taskLine(t)).join('; ')}`] : []),
        ].join('\n'), { task: forModel(again), brought_back: back.map(forModel) });
      },
    }),
    defineTool({
      name: 'fan_out',
      title: 'Split a task into parallel sub-tasks with a join',
      description: 'From a task you hold (or sent), hands off several sub-tasks at once and a join task that waits for them: '
      + '"first" (the first success wins and the others are cancelled), "all" (every result), or "judge" (an agent with the '
      + 'judging capability gets every result). First and all joins come back to you; the join\'s result gathers the sub-tasks\'.',
      input: {
        task: taskRef.describe('The task the sub-tasks are part of (one you hold or sent).'),
        subtasks: z.array(z.object({
          title: z.string().min(1),
          to: z.string().optional().describe('The agent to do it; or leave out and give capabilities.'),
          capabilities: z.array(z.string()).optional().describe('Any agent with these may take it.'),
          description: z.string().optional(),
          payload: JsonObject.optional(),
          expected_outputs: z.array(ExpectedOutput).optional(),
        })).min(1).max(100),
        join: z.enum(['first', 'all', 'judge']).describe('How the results come together.'),
        judge_capability: z.string().optional().describe('For judge: the capability of the agents that may judge (default "judge").'),
        join_title: z.string().optional(),
      },
      run: fanOut,
      // As a task, the join: it ends when the sub-tasks' results have come together.
      task: followed((s) => s.join)(fanOut as Tool['run']),
    }),
  ];
}

/** Messages and artifacts. */
function messagesAndArtifacts(agent: McpAgent): Tool[] {
  const { client } = agent;
  return [
    defineTool({
      name: 'message',
      title: 'Send a message',
      description: 'Sends a message to one agent, or to everyone when to is left out; with task, it joins that task\'s thread.',
      input: { to: z.string().optional(), text: z.string().min(1), task: taskRef.optional() },
      run: async ({ to, text, task }) => {
        const sent = await client.send({ to: to ?? null, body: { text }, taskId: task ? await agent.resolve(task) : undefined });
        return ok(`Sent to ${to ?? 'everyone'}.`, { message: sent });
      },
    }),
    defineTool({
      name: 'inbox',
      title: 'Read your inbox',
      description: 'Messages to you and to everyone, newest first (progress, questions, answers, results of tasks you sent), and the tasks waiting '
      + 'for you. Marks the direct messages it shows as read.',
      input: { unread: z.boolean().optional().describe('Only unread messages to you.'), task: taskRef.optional(), limit: z.number().int().min(1).max(200).optional() },
      run: async ({ unread, task, limit = 50 }) => {
        const taskId = task ? await agent.resolve(task) : undefined;
        const [messages, waiting] = await Promise.all([
          client.messages({ unread, taskId, limit }),
          client.listTasks({ box: 'mine', status: ['pending'], limit: 100 }),
        ]);
        const toMark = messages.filter((m) => m.to_agent === client.agentId && !m.read_at).map((m) => m.id);
        if (toMark.length) await client.markRead(toMark);
        const text = [
          waiting.length ? `Waiting for you:\n${waiting.map(taskLine).join('\n')}` : 'No task is waiting for you.',
          messages.length ? `Messages:\n${messages.map((m) => `${m.from_agent}${m.task_id ? ` on ${shortId(m.task_id)}` : ''}: ${messageText(m)}`).join('\n')}` : 'No messages.',
        ].join('\n\n');
        return ok(text, { waiting: waiting.map(forModel), messages });
      },
    }),
    defineTool({
      name: 'artifact_get',
      title: 'Read an artifact',
      description: 'Reads an artifact of a task you can see, by task and name: as text (JSON parsed too) or as base64 for binary content.',
      input: { task: taskRef, name: z.string().min(1), as: z.enum(['text', 'base64']).optional() },
      annotations: { readOnlyHint: true },
      run: async ({ task, name, as }) => {
        const artifact = await client.artifact(await agent.resolve(task), name);
        const { content: _bytes, text: _text, json, ...meta } = artifact;
        if (!artifact.content) return ok(`${name} is stored elsewhere: ${artifact.uri}`, { artifact: meta });
        const binary = as === 'base64' || (as === undefined && !isTextual(artifact.media_type, artifact.content));
        const body = binary ? artifact.content.toString('base64') : artifact.text();
        return ok(binary ? `${name} (${artifact.media_type}, ${artifact.content.length} bytes, base64 in structured content)` : body, { artifact: meta, ...(binary ? { base64: body } : { text: body }), ...(json === undefined ? {} : { json }) });
      },
    }),
  ];
}
