/**
 * A2A's requests, answered by Baton as the calling agent: SendMessage hands off (or answers the question
 * a task waits on), GetTask and ListTasks read, CancelTask cancels, and the streams follow the task's
 * history, woken by Realtime push on the caller's topic. A stream that is resumed with the last event
 * it saw (Last-Event-ID, or metadata.after_event) gets every event after it from the history first.
 */
import { Role, type AgentCard, type CancelTaskRequest, type GetTaskRequest, type ListTasksRequest, type ListTasksResponse,
  type Message as A2AMessage, type SendMessageRequest, type StreamResponse, type SubscribeToTaskRequest, type Task as A2ATask } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError, PushNotificationNotSupportedError,
  ExtendedAgentCardNotConfiguredError, A2AError } from '@a2a-js/sdk/errors';
import { STATE_HEADERS_KEY, type A2ARequestHandler, type RequestHeaders, type ServerCallContext } from '@a2a-js/sdk/server';
import { PushListener } from '../agent/push.js';
import type { BatonClient } from '../client/agent.js';
import { BatonError, InvalidTransitionError, NotFoundError, toBatonError, ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';
import { finalStatuses, TaskId, type Task, type TaskEvent } from '../schemas.js';
import { artifactOf, BadMessage, UnreadableContent, contextOf, handoffOf, message, statusesOf, a2aStatusOf, taskOf, textOf, textPart } from './mapping.js';

export type Target = { agent: string } | { capability: string };

/** How long a blocking SendMessage waits for the task to finish or ask before it answers with the task as it is. */
const BLOCKING_MS = 60_000;

/** What a request's handler is told by the server: when its caller went away, and where to count the tasks it follows. */
export interface RequestScope {
  /** Aborted once the caller's connection closes: a stream or a blocking wait for it ends then. */
  callerGone: AbortSignal;
  /** The tasks followed for callers right now, one entry each. */
  following: Set<object>;
}

export class BatonA2AHandler implements A2ARequestHandler {
  constructor(
    private readonly client: BatonClient,
    private readonly target: Target,
    private readonly card: () => Promise<AgentCard>,
    private readonly log: Logger,
    private readonly scope: RequestScope = { callerGone: new AbortController().signal, following: new Set() },
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return this.card();
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError('Baton publishes one card per agent; there is no extended card');
  }

  async sendMessage(params: SendMessageRequest): Promise<A2AMessage | A2ATask> {
    const task = await this.accept(params);
    if (params.configuration?.returnImmediately) return this.a2aTask(task, params.configuration.historyLength);
    // Blocking: answer once the task is final or waits for input (or after a minute, as it is then).
    const deadline = Date.now() + BLOCKING_MS;
    for await (const event of this.follow(task.id, undefined, deadline)) void event;
    return this.a2aTask(await this.client.getTask(task.id), params.configuration?.historyLength);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const task = await this.accept(params);
    yield { payload: { $case: 'task', value: await this.a2aTask(task, 0) } };
    // From its creation on: whatever happened since the hand-off comes first, in order.
    const [created] = await this.client.events(task.id);
    yield* this.follow(task.id, created?.id ?? 0, Infinity, true);
  }

  async getTask(params: GetTaskRequest): Promise<A2ATask> {
    return this.a2aTask(await this.own(params.id), params.historyLength);
  }

  async cancelTask(params: CancelTaskRequest): Promise<A2ATask> {
    const task = await this.own(params.id);
    try {
      return this.a2aTask(await this.client.cancel(task.id, 'cancelled over A2A'));
    } catch (err) {
      // The database judges whether the task may still be cancelled; its "not from this status" is A2A's not-cancelable.
      if (err instanceof InvalidTransitionError) throw new TaskNotCancelableError({ message: err.message, metadata: { bt_code: err.code, ...(err.hint ? { hint: err.hint } : {}) } });
      throw a2aError(err);
    }
  }

  /** The caller's own tasks (those it sent), newest first, paged by an opaque token. */
  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const size = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    const offset = params.pageToken ? Number.parseInt(Buffer.from(params.pageToken, 'base64url').toString(), 10) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new RequestMalformedError('pageToken is not one this server gave');
    let query = this.client.db.from('task_handoffs').select('*', { count: 'exact' }).eq('from_agent', this.client.agentId);
    if (params.status) query = query.in('status', statusesOf(params.status));
    // A context is a chain of tasks, named by its root's id: any other id names no context.
    if (params.contextId && !TaskId.safeParse(params.contextId).success) return { tasks: [], nextPageToken: '', pageSize: size, totalSize: 0 };
    if (params.contextId) query = query.eq('root_task_id', params.contextId);
    if (params.statusTimestampAfter) query = query.gt('updated_at', params.statusTimestampAfter);
    const { data, count, error } = await query.order('created_at', { ascending: false }).order('id').range(offset, offset + size - 1);
    if (error) throw a2aError(toBatonError(error));
    const tasks = await Promise.all((data as Task[]).map((t) => this.a2aTask(t, params.historyLength ?? 0, false)));
    const next = offset + tasks.length < (count ?? 0) ? Buffer.from(String(offset + tasks.length)).toString('base64url') : '';
    return { tasks, nextPageToken: next, pageSize: size, totalSize: count ?? tasks.length };
  }

  async *resubscribe(params: SubscribeToTaskRequest, context?: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const task = await this.own(params.id);
    // A task that has ended has nothing left to stream (the specification's UnsupportedOperation);
    // GetTask reads it whole. A stream cut off before the end is resumed from Last-Event-ID.
    if (finalStatuses.includes(task.status)) {
      throw new UnsupportedOperationError({ message: `task ${task.id} is ${task.status}: there is nothing left to subscribe to`, metadata: { bt_code: 'BT001', hint: 'Read it with GetTask (tasks/get).' } });
    }
    const after = this.resumeFrom(context);
    yield { payload: { $case: 'task', value: await this.a2aTask(task, 0) } };
    yield* this.follow(task.id, after ?? await this.lastEventId(task.id), Infinity, true);
  }

  async createTaskPushNotificationConfig(): Promise<never> { throw new PushNotificationNotSupportedError('Baton pushes through Realtime and streams; A2A push notifications are not offered'); }
  async getTaskPushNotificationConfig(): Promise<never> { throw new PushNotificationNotSupportedError('A2A push notifications are not offered'); }
  async listTaskPushNotificationConfigs(): Promise<never> { throw new PushNotificationNotSupportedError('A2A push notifications are not offered'); }
  async deleteTaskPushNotificationConfig(): Promise<never> { throw new PushNotificationNotSupportedError('A2A push notifications are not offered'); }

  /** A new message hands off; a message on a task that waits for input answers its question. */
  private async accept(params: SendMessageRequest): Promise<Task> {
    const msg = params.message;
    if (!msg) throw new RequestMalformedError('the request has no message');
    try {
      if (msg.taskId) {
        const task = await this.own(msg.taskId);
        if (task.status !== 'input_required') {
          throw new UnsupportedOperationError({ message: `task ${task.id} is ${task.status}; a message on an existing task answers its question, and it asks none now`, metadata: { bt_code: 'BT001' } });
        }
        const answer = textOf(msg);
        if (!answer) throw new RequestMalformedError('an answer needs a text part');
        return await this.client.answer(task.id, answer);
      }
      const input = handoffOf(msg);
      return 'agent' in this.target
        ? await this.client.handoff({ ...input, to: this.target.agent })
        : await this.client.broadcast({ ...input, requiredCapabilities: [this.target.capability] });
    } catch (err) {
      throw a2aError(err);
    }
  }

  /**
   * A task the caller may see, or A2A's TaskNotFound. A2A's task ids are opaque strings: one that is not
   * a Baton task id names no task, as an unknown one does (not InvalidParams).
   */
  private async own(id: string): Promise<Task> {
    if (!TaskId.safeParse(id).success) throw new TaskNotFoundError({ message: `no task ${id}`, metadata: { bt_code: 'BT002' } });
    try {
      return await this.client.getTask(id);
    } catch (err) {
      throw a2aError(err);
    }
  }

  private async a2aTask(task: Task, historyLength?: number, withArtifacts = true): Promise<A2ATask> {
    const [artifacts, messages] = await Promise.all([
      withArtifacts ? this.client.artifacts(task.id).then((list) => Promise.all(list.map((a) => this.client.artifact(task.id, a.name)))) : [],
      historyLength === 0 ? [] : this.client.messages({ taskId: task.id, limit: 200 }).then((m) => m.reverse()),
    ]);
    return taskOf(task, artifacts, messages, historyLength);
  }

  private async lastEventId(taskId: string): Promise<number> {
    const events = await this.client.events(taskId);
    return events.at(-1)?.id ?? 0;
  }

  private resumeFrom(context?: ServerCallContext): number | undefined {
    const headers = context?.state?.get(STATE_HEADERS_KEY) as RequestHeaders | undefined;
    const raw = headers?.['last-event-id'];
    const value = Number(Array.isArray(raw) ? raw[0] : raw);
    return Number.isInteger(value) && value >= 0 ? value : undefined;
  }

  /**
   * The task's events after `afterEventId`, in order, as status updates (each with metadata.event_id, to
   * resume from), its new artifacts as artifact updates, and progress as working updates; until it is
   * final (or waits for input, unless `throughInput`), or `deadline`, or the caller goes away. Push on the
   * caller's topic wakes it; a slow look every 2 s covers a task the caller is not told of (an offer it
   * did not send).
   */
  private async *follow(taskId: string, afterEventId: number | undefined, deadline: number, throughInput = false): AsyncGenerator<StreamResponse, void, undefined> {
    let wake: (() => void) | undefined;
    const push = new PushListener(this.client.db, [`agent:${this.client.agentId}`], {
      work: () => undefined,
      news: (tasks) => { if (tasks.some((t) => t.id === taskId)) wake?.(); },
      up: () => wake?.(),
    }, this.log);
    push.start();
    const { callerGone, following } = this.scope;
    const stopped = () => wake?.();
    callerGone.addEventListener('abort', stopped);
    const entry = {};
    following.add(entry);
    let last = afterEventId ?? 0;
    const artifacts = new Set<string>();
    let progressAt: string | null = null;
    try {
      while (!callerGone.aborted) {
        // The task first, then its history: a status change and its event commit together, so the
        // history read second holds every event up to the status read first. Read side by side, a task
        // seen completed could come with a history not yet showing it, and the stream would end
        // without its last update.
        const task = await this.client.getTask(taskId);
        const events = (await this.client.events(taskId)).filter((e) => e.id > last);
        // A stream ends at its final status: that update goes last, after the task's artifacts, and
        // only once the task itself reads final (a final event newer than the task read here waits
        // for the next look, so that nothing read before it follows it).
        const ending = finalStatuses.includes(task.status);
        const finalEvent = ending ? [...events].reverse().find((e) => finalStatuses.includes(e.to_status)) : undefined;
        for (const event of events) {
          if (finalStatuses.includes(event.to_status) && !ending) break;
          if (event === finalEvent) continue;
          last = event.id;
          yield this.statusUpdate(task, event);
        }
        if (task.progress_at && task.progress_at !== progressAt && task.status === 'in_progress') {
          progressAt = task.progress_at;
          yield this.statusUpdate(task);
        }
        for (const a of await this.client.artifacts(taskId)) {
          if (artifacts.has(a.name)) continue;
          artifacts.add(a.name);
          yield { payload: { $case: 'artifactUpdate', value: { taskId, contextId: contextOf(task), artifact: artifactOf(taskId, await this.client.artifact(taskId, a.name)), append: false, lastChunk: true, metadata: undefined } } };
        }
        if (finalEvent) {
          last = finalEvent.id;
          yield this.statusUpdate(task, finalEvent);
        }
        if (ending || (!throughInput && task.status === 'input_required') || Date.now() > deadline) return;
        if (callerGone.aborted) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, push.up ? 2000 : 500).unref();
        });
      }
      this.log.debug({ task: taskId }, 'the A2A caller went away; no longer following the task');
    } finally {
      following.delete(entry);
      callerGone.removeEventListener('abort', stopped);
      await push.stop();
    }
  }

  private statusUpdate(task: Task, event?: TaskEvent): StreamResponse {
    const status = event ? { ...a2aStatusOf({ ...task, status: event.to_status, status_reason: event.note ?? (event.to_status === task.status ? task.status_reason : null) }, event) } : a2aStatusOf(task);
    if (event?.note && event.to_status !== 'completed') {
      status.message = message(Role.ROLE_AGENT, [textPart(event.note)], { messageId: `${task.id}:event:${event.id}`, taskId: task.id, contextId: contextOf(task) });
    }
    return { payload: { $case: 'statusUpdate', value: { taskId: task.id, contextId: contextOf(task), status, metadata: { event_id: event?.id ?? null, baton_status: event?.to_status ?? task.status } } } };
  }
}

/** A Baton refusal as A2A's error, with Baton's BT code and hint in its metadata. */
function a2aError(err: unknown): Error {
  if (err instanceof A2AError) return err;
  if (err instanceof UnreadableContent) return new ContentTypeNotSupportedError(err.message);
  if (err instanceof BadMessage) return new RequestMalformedError(err.message);
  if (err instanceof BatonError) {
    const metadata = { bt_code: err.code, ...(err.hint ? { hint: err.hint } : {}) };
    if (err instanceof NotFoundError) return new TaskNotFoundError({ message: err.message, metadata });
    if (err instanceof ValidationError) return new RequestMalformedError({ message: err.message, metadata });
    return new UnsupportedOperationError({ message: err.message, metadata });
  }
  return err instanceof Error ? err : new Error(String(err));
}
