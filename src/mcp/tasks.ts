/**
 * MCP's tasks (the `io.modelcontextprotocol/tasks` extension, specification 2025-11-25), backed by
 * Baton's own tasks. A tool call a host makes as a task (handoff, broadcast, fan_out, wait_for) answers
 * at once with a handle whose id is the Baton task's id; `tasks/get`, `tasks/result`, `tasks/list` and
 * `tasks/cancel` read and act on the Baton task, through the agent's token and row-level security, so
 * any `baton mcp` of the same agent (restarted, or on another host) answers for it. Nothing is kept in
 * this process that a restart would lose but the questions it has put to the host, which it puts again.
 *
 * An agent's MCP tasks are the Baton tasks it sent, and only those: the context that creates a task
 * owns it (the specification's rule), and its sender is the one who may answer its questions or cancel
 * it. So the four methods agree: a task `tasks/get` answers for is in `tasks/list`, and the agent a task
 * was handed to (or a stranger) finds it not there; it follows such a task with a plain `wait_for`.
 *
 * A question the remote agent asks (Baton's ask) makes the MCP task `input_required`; the question
 * goes to the host as a form elicitation on the task's side channel (delivered with `tasks/result`),
 * and the person's answer is sent as Baton's answer, in the agent's name as any answer is. An answer
 * Baton refuses (the question was answered another way meanwhile, or the task was cancelled) is told to
 * the host: as a warning in its log, and in the task's status message.
 */
import type { CreateTaskOptions, QueuedMessage, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { refusalOf } from '../errors.js';
import type { Task } from '../schemas.js';
import { messageText } from '../text/render.js';
import { forModel, isTextual, taskLine, type McpAgent } from './shared.js';

/** How often a host is asked to look again while a task runs (ms); push notifies it sooner. */
export const TASK_POLL_MS = 2_000;

/** Baton's statuses as MCP's: a task waiting to be claimed or being worked on is `working`. */
const mcpStatus: Record<Task['status'], McpTask['status']> = {
  pending: 'working', claimed: 'working', in_progress: 'working', input_required: 'input_required',
  completed: 'completed', failed: 'failed', rejected: 'failed', cancelled: 'cancelled',
};

/** What a task's MCP status message says: where it stands, and what the host should know (an answer not taken). */
function statusLine(task: Task, note?: string): string | undefined {
  const status = task.status === 'input_required' ? 'waiting for your answer'
    : task.status_reason ?? task.progress_message ?? undefined;
  return [status, note].filter(Boolean).join('; ') || undefined;
}

export function toMcpTask(task: Task, note?: string): McpTask {
  const said = statusLine(task, note);
  return {
    taskId: task.id,
    status: mcpStatus[task.status],
    ...(said ? { statusMessage: said } : {}),
    createdAt: task.created_at,
    lastUpdatedAt: task.updated_at,
    // Kept as Baton keeps finished tasks (baton_settings.keep_finished), not by the host's ttl.
    ttl: null,
    pollInterval: TASK_POLL_MS,
  };
}

/** Artifacts up to this size come back inside the result; larger ones are named, to read with artifact_get. */
const INLINE_BYTES = 1 << 20;

/** The Baton task's outcome as the tool's result: the summary, the structured result, and the artifacts. */
export async function resultOf(agent: McpAgent, task: Task): Promise<CallToolResult> {
  const listed = await agent.client.artifacts(task.id);
  const content: CallToolResult['content'] = [{ type: 'text', text: `${taskLine(task)}${task.result?.summary ? `\n${task.result.summary}` : ''}${task.status_reason ? `\n${task.status_reason}` : ''}` }];
  for (const meta of listed) {
    // The artifact resource's URI (resources.ts), which the host may read again.
    const uri = `baton://artifact/${task.id}/${encodeURIComponent(meta.name)}`;
    if ((meta.size_bytes ?? 0) > INLINE_BYTES || meta.uri) {
      content.push({ type: 'resource_link', uri, name: meta.name, mimeType: meta.media_type, description: `${meta.size_bytes ?? '?'} bytes; read it as this resource or with artifact_get` });
      continue;
    }
    const artifact = await agent.client.artifact(task.id, meta.name);
    const bytes = artifact.content ?? Buffer.alloc(0);
    content.push({
      type: 'resource',
      resource: isTextual(meta.media_type, bytes)
        ? { uri, mimeType: meta.media_type, text: bytes.toString('utf8') }
        : { uri, mimeType: meta.media_type, blob: bytes.toString('base64') },
    });
  }
  return {
    content,
    structuredContent: { task: forModel(task), artifacts: listed },
    ...(task.status === 'completed' ? {} : { isError: true }),
  };
}

const uuid = z.uuid();

/**
 * The task store the SDK's protocol layer calls for tasks/get, tasks/result, tasks/list and
 * tasks/cancel. Every read is the agent's own, so the session a host calls from does not matter.
 */
export class BatonTaskStore implements TaskStore {
  /** The questions put to the host from this process, by message id, so that each is put once. */
  private readonly asked = new Set<string>();
  /** The version of each task (its updated_at) whose thread was last read for a question. */
  private readonly looked = new Map<string, string>();
  server?: Server;
  /** Told of every task a host reads through the store, so that its changes can be told to the host. */
  onRead?: (taskId: string) => void;
  /** Told when this process changed a task (an answer given), so that a waiting tasks/result looks again. */
  onChange?: (taskId: string) => void;

  constructor(private readonly agent: McpAgent) {}

  /** The Baton task the tool made (or waits on) becomes the MCP task: its id is the tool's to give. */
  async createTask(params: CreateTaskOptions): Promise<McpTask> {
    const id = params.context?.batonTaskId;
    if (typeof id !== 'string') throw new Error('a Baton task store makes no tasks of its own: the tool names the Baton task');
    const task = await this.agent.client.getTask(id);
    ownTask(this.agent, task);
    return toMcpTask(task);
  }

  async getTask(taskId: string): Promise<McpTask | null> {
    const task = await this.read(taskId);
    if (!task) return null;
    this.onRead?.(task.id);
    if (task.status === 'input_required') void this.putQuestion(task).catch((err: unknown) => this.agent.log.warn({ err, task: task.id }, 'could not put the question to the host'));
    return toMcpTask(task, this.agent.refusedAnswers.get(task.id));
  }

  async getTaskResult(taskId: string): Promise<CallToolResult> {
    const task = await this.read(taskId);
    if (!task) throw new Error(`no task ${taskId} that agent "${this.agent.client.agentId}" can see`);
    return resultOf(this.agent, task);
  }

  /** Results are the agents' to report, through Baton; a host cannot store one here. */
  async storeTaskResult(): Promise<void> {
    throw new Error('a Baton task\'s result is reported by the agent that does it');
  }

  /** tasks/cancel: the Baton task is cancelled by Baton's rules (the sender may; a finished task may not be). */
  async updateTaskStatus(taskId: string, status: McpTask['status'], statusMessage?: string): Promise<void> {
    if (status !== 'cancelled') return;
    await this.agent.client.cancel(taskId, statusMessage ?? 'cancelled by the MCP host');
  }

  /** The tasks this agent sent, a page at a time (the cursor is the offset). */
  async listTasks(cursor?: string): Promise<{ tasks: McpTask[]; nextCursor?: string }> {
    const offset = cursor ? Number(cursor) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new Error(`"${cursor}" is not a cursor this server gave`);
    const page = 50;
    const tasks = await this.agent.client.listTasks({ box: 'sent', limit: page + 1, offset });
    return { tasks: tasks.slice(0, page).map((t) => toMcpTask(t, this.agent.refusedAnswers.get(t.id))), ...(tasks.length > page ? { nextCursor: String(offset + page) } : {}) };
  }

  /** The task if the agent sent it; an id that is not one of Baton's names no task either. */
  private async read(taskId: string): Promise<Task | null> {
    if (!uuid.safeParse(taskId).success) return null;
    const [task] = await this.agent.client.getTasks([taskId]);
    return task && task.from_agent === this.agent.client.agentId ? task : null;
  }

  /**
   * The remote agent's open question, put to the host's person as a form elicitation on the task's side
   * channel; an accepted answer goes back as Baton's answer. Put once per question by this process (a
   * restarted server puts it again, its queue being gone).
   */
  private async putQuestion(task: Task): Promise<void> {
    // A host polls while it waits: the thread is read once per change of the task, not once per poll.
    if (!this.server || this.looked.get(task.id) === task.updated_at) return;
    this.looked.set(task.id, task.updated_at);
    const question = await openQuestion(this.agent, task);
    if (!question || this.asked.has(question.id)) return;
    this.asked.add(question.id);
    const reply = await this.server.elicitInput(question.form, { relatedTask: { taskId: task.id }, timeout: 7 * 86_400_000 });
    if (reply.action === 'accept' && typeof reply.content?.answer === 'string') {
      try {
        await this.agent.client.answer(task.id, reply.content.answer);
        this.agent.refusedAnswers.delete(task.id);
        this.onChange?.(task.id);
      } catch (err) {
        // Said to whoever gave it: the host's log, and the task's status message from now on.
        const why = `your answer "${reply.content.answer}" was not taken: ${(err as Error).message}`;
        this.agent.refusedAnswers.set(task.id, why);
        this.agent.log.info({ err, task: task.id }, 'Baton refused the host\'s answer');
        await this.server.sendLoggingMessage({ level: 'warning', logger: 'baton', data: { taskId: task.id, message: why } }).catch(() => undefined);
        this.onChange?.(task.id);
      }
    } else {
      // Declined or dismissed: the question stays open, to answer with the answer tool or by cancelling.
      this.agent.log.info({ task: task.id, action: reply.action }, 'the host did not answer the question');
    }
  }
}


/** A question the task waits on, as a form for the person at the host: its message id and the form (both eras ask it so). */
export interface OpenQuestion {
  id: string;
  form: { mode: 'form'; message: string; requestedSchema: { type: 'object'; properties: { answer: { type: 'string'; title: string } }; required: ['answer'] } };
}

/** The question a task waiting for an answer asks its sender: the last question in its thread. */
export async function openQuestion(agent: McpAgent, task: Task): Promise<OpenQuestion | undefined> {
  if (task.status !== 'input_required') return undefined;
  const [question] = await agent.client.messages({ taskId: task.id, kind: 'question', limit: 1 });
  if (!question) return undefined;
  return {
    id: question.id,
    form: {
      mode: 'form',
      message: `${task.claimed_by ?? 'The agent'} asks about "${task.title}": ${messageText(question)}`,
      requestedSchema: { type: 'object', properties: { answer: { type: 'string', title: 'Your answer' } }, required: ['answer'] },
    },
  };
}

/**
 * Who waits for a task to change: the SDK's tasks/result sleeps a poll interval between looks, and is
 * woken sooner when push says the task changed, or a message for the host (a question) is queued.
 */
export class TaskWakeups {
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Changes that came while nobody waited (between two looks): the next wait ends at once. */
  private readonly missed = new Map<string, string>();

  /** `told` hears of each wait that begins (no `why`) and of each that a change ends early (`why`). */
  constructor(private readonly told: (taskId: string, why?: string) => void = () => undefined) {}

  /** Resolves when `slept` does, or when the task is woken first (or was, since the last look). */
  until(taskId: string, slept: Promise<void>): Promise<void> {
    const missed = this.missed.get(taskId);
    if (missed) {
      this.missed.delete(taskId);
      slept.catch(() => undefined);
      this.told(taskId, missed);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const wake = () => resolve();
      const set = this.waiting.get(taskId) ?? new Set();
      set.add(wake);
      this.waiting.set(taskId, set);
      this.told(taskId);
      slept.then(resolve, reject).finally(() => {
        set.delete(wake);
        if (!set.size) this.waiting.delete(taskId);
      });
    });
  }

  /** Wakes whoever waits for the task, and says so; with nobody waiting, the next wait is short. */
  wake(taskId: string, why: string): void {
    const waiting = this.waiting.get(taskId);
    if (!waiting?.size) {
      this.missed.set(taskId, why);
      return;
    }
    for (const wake of waiting) wake();
    this.told(taskId, why);
  }
}

/** The SDK's queue of messages for a task's side channel, which wakes the task's tasks/result when one is queued. */
export class WakingMessageQueue extends InMemoryTaskMessageQueue {
  constructor(private readonly wakeups: TaskWakeups) { super(); }

  override async enqueue(taskId: string, message: QueuedMessage, sessionId?: string, maxSize?: number): Promise<void> {
    await super.enqueue(taskId, message, sessionId, maxSize);
    this.wakeups.wake(taskId, 'a message for the host');
  }
}

/** Refuses to follow, as an MCP task, a task the agent did not send: it is not the agent's MCP task. */
export function ownTask(agent: McpAgent, task: Task): string {
  if (task.from_agent === agent.client.agentId) return task.id;
  throw refusalOf('BT005', {
        message: `task ${task.id} was sent by "${task.from_agent}": only the tasks this agent sent are its MCP tasks`,
    hint: 'call wait_for without "task" (it waits up to timeout_seconds), or follow the task from its sender\'s host',
  });
}
