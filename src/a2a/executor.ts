/**
 * The `a2a` executor: a daemon forwards a task to a remote A2A agent and reports what it does. Its
 * status messages become Baton progress, its input-required a Baton question to the sender (the answer
 * goes back on the same remote task), its artifacts Baton artifacts; a Baton cancellation cancels the
 * remote task, and the remote agent's failure fails the Baton task by the usual rules (an unreachable
 * agent is a failure worth retrying after a backoff). Once the remote agent has named its task, the work
 * is never sent again: a stream that breaks off is followed by reading that task until it settles.
 */
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Role, TaskState, type Message as A2AMessage, type Part, type SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { neverReached, RetryableError, UnavailableError, type ExecutorContext, type Handler } from '../contract.js';
import type { ResolvedArtifact } from '../client/artifacts.js';
import type { Task } from '../schemas.js';
import { dataPart, finalStates, textPart } from './mapping.js';

export interface A2AExecutorOptions {
  /** The remote agent's base URL (its card is at .well-known/agent-card.json below it) or its card's URL. */
  url: string;
  /** A bearer token for the remote agent, when it asks for one. */
  token?: string;
  /**
   * What the remote agent's `input-required` means. `question` (A2A's meaning, the default): its words
   * go to the sender as a Baton question, and the answer goes back on the same remote task. `result`:
   * the turn is over and so is the work, the words it said in the turn being the result; for agents that
   * end every turn `input-required`, asked or not (Gemini CLI's A2A server, A2A 0.3).
   */
  inputRequired?: 'question' | 'result';
}

const cardPath = '.well-known/agent-card.json';

/**
 * A client for agents of either version: a card of A2A 0.3 (many agents in the wild, Gemini CLI's
 * server among them) is read as one, and the agent is then spoken to in 0.3 (`message/stream`,
 * `tasks/get`, `tasks/cancel`); a 1.0 card gets 1.0. The SDK's compatibility layer does the mapping.
 */
const legacyCompat = { enabled: true };
const speakingBoth = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ legacyCompat }), new RestTransportFactory({ legacyCompat })],
  cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
});

export function a2aExecutor({ url, token, inputRequired = 'question' }: A2AExecutorOptions): Handler {
  let connecting: Promise<Client> | undefined;
  const connect = () => {
    const [base, path] = url.endsWith('.json') ? [url.slice(0, url.lastIndexOf('/') + 1), url.slice(url.lastIndexOf('/') + 1)] : [url.endsWith('/') ? url : `${url}/`, cardPath];
    connecting ??= new ClientFactory(speakingBoth).createFromUrl(base, path === cardPath ? undefined : path).catch((err: unknown) => {
      connecting = undefined;
      throw new UnavailableError(`could not reach the A2A agent at ${url}: ${(err as Error).message}`, { cause: err });
    });
    return connecting;
  };
  const serviceParameters: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};

  return async (task: Task, ctx: ExecutorContext) => {
    const client = await connect();
    const remote: Remote = { contextId: '' };
    const cancelRemote = () => {
      if (remote.id) void cancelRemoteTask(client, remote.id, serviceParameters, ctx.log);
    };
    ctx.signal.addEventListener('abort', cancelRemote, { once: true });
    const pending = new Map<string, { name: string; parts: Part[] }>();
    let summary: string | undefined;
    try {
      let request = send(requestParts(task, ctx.inputs), remote);
      for (let answered = false; ; answered = true) {
        let outcome = await streamed(client, request, answered, remote, pending, ctx, serviceParameters, cancelRemote);
        // The stream ended before the remote task did (a cut connection, a restarted server): the task goes
        // on over there, so it is read until it settles, and never sent again.
        if (!outcome?.final && outcome?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
          outcome = await settle(client, remote, pending, ctx, serviceParameters, url);
        }
        if (outcome.text) summary = outcome.text;
        if (outcome.state === TaskState.TASK_STATE_FAILED || outcome.state === TaskState.TASK_STATE_REJECTED) {
          throw new Error(`the remote A2A agent ${outcome.state === TaskState.TASK_STATE_FAILED ? 'failed' : 'rejected'} the task${outcome.text ? `: ${outcome.text}` : ''}`);
        }
        if (outcome.state === TaskState.TASK_STATE_CANCELED) throw new Error('the remote A2A agent cancelled the task');
        if (outcome.state !== TaskState.TASK_STATE_INPUT_REQUIRED || inputRequired === 'result') break;
        // The sender answers through Baton; the answer goes back on the same remote task.
        const answer = await ctx.ask(outcome.text ?? 'The remote agent needs more input.');
        request = send([textPart(answer)], remote);
      }
      for (const { name, parts } of pending.values()) await attach(ctx, name, parts);
      return { status: 'success', summary: summary ?? `done by the A2A agent at ${url}`, remote_task: remote.id ?? null };
    } catch (err) {
      if (ctx.signal.aborted || err instanceof RetryableError) throw err;
      // Nothing answered before the remote agent named a task: the task never started there.
      if (!remote.id && neverReached(err)) throw new UnavailableError(`could not reach the A2A agent at ${url}: ${(err as Error).message}`, { cause: err });
      if (isLost(err)) throw new RetryableError(`lost the A2A agent at ${url}: ${(err as Error).message}`, { cause: err });
      throw err;
    } finally {
      ctx.signal.removeEventListener('abort', cancelRemote);
    }
  };
}

interface Remote { id?: string; contextId: string }
interface Outcome { state: TaskState; text?: string; final: boolean }

/**
 * How long a stream stays open after the Baton task was cancelled, for the remote agent to name its
 * task so that it can be told to cancel it.
 */
const NAMING_MS = 10_000;
/** Tries at telling the remote agent to cancel, while it cannot be reached (1 s apart, doubling). */
const CANCEL_TRIES = 5;

/** Tells the remote agent to cancel its task, trying again while it cannot be reached. */
async function cancelRemoteTask(client: Client, id: string, serviceParameters: Record<string, string>, log: ExecutorContext['log']): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await client.cancelTask({ tenant: '', id, metadata: {} }, { serviceParameters });
      log.info({ remoteTask: id }, 'cancelled the remote A2A task');
      return;
    } catch (err) {
      if (attempt === CANCEL_TRIES || !isLost(err)) {
        log.warn({ err, remoteTask: id, attempts: attempt }, 'could not cancel the remote A2A task');
        return;
      }
      await sleep(1000 * 2 ** (attempt - 1));
    }
  }
}

/** The id of the remote task an event is about, if it names one. */
function remoteTaskId(event: StreamResponse): string | undefined {
  const payload = event.payload;
  if (!payload) return undefined;
  return (payload.$case === 'task' ? payload.value.id : payload.value.taskId) || undefined;
}

/** How long a remote task whose stream broke off is looked for, before the Baton task fails to be retried. */
const SETTLE_MS = 5 * 60_000;
const SETTLE_EVERY_MS = 1000;

const isLost = (err: unknown) => err instanceof Error && /fetch failed|terminated|ECONNREFUSED|ECONNRESET|socket hang up/i.test(`${err.message} ${String(err.cause ?? '')}`);

/**
 * One message's stream: its events followed, until the remote task is final or asks. Returns the last
 * state it said; undefined when the connection broke off before it said one that settles the task.
 */
async function streamed(client: Client, request: SendMessageRequest, answered: boolean, remote: Remote,
  pending: Map<string, { name: string; parts: Part[] }>, ctx: ExecutorContext, serviceParameters: Record<string, string>,
  cancelRemote: () => void): Promise<Outcome | undefined> {
  let last: Outcome | undefined;
  // What the agent said while it worked in this turn: an agent that streams its reply as working
  // messages (Gemini CLI's A2A server) and then ends the turn input-required with no words of its own
  // has said its question, or its result, in these.
  const turn: string[] = [];
  // The stream ends with the Baton task, but not before the remote agent has named its task (for
  // NAMING_MS at most): a task cancelled before that would run on over there, never told.
  const stream = new AbortController();
  const stop = () => {
    if (remote.id) stream.abort(ctx.signal.reason);
    else setTimeout(() => stream.abort(ctx.signal.reason), NAMING_MS).unref();
  };
  if (ctx.signal.aborted) stop();
  else ctx.signal.addEventListener('abort', stop, { once: true });
  try {
    for await (const event of client.sendMessageStream(request, { serviceParameters, signal: stream.signal })) {
      if (ctx.signal.aborted) {
        const named = remote.id ? undefined : remoteTaskId(event);
        if (named) {
          remote.id = named;
          cancelRemote();
        }
        throw ctx.signal.reason;
      }
      const outcome = await follow(event, remote, pending, ctx);
      // A stream after an answer opens with the task as it was: still asking, which is no new question.
      if (answered && event.payload?.$case === 'task') continue;
      if (!outcome) continue;
      if (outcome.state === TaskState.TASK_STATE_WORKING && outcome.text) turn.push(outcome.text);
      // The last words said stand for the whole, when the final status says none; an input-required
      // without words stands for what was said in the turn.
      const asking = outcome.state === TaskState.TASK_STATE_INPUT_REQUIRED;
      last = { ...outcome, text: outcome.text ?? (asking && turn.length ? turn.join('') : outcome.final ? last?.text : undefined) };
      if (last.final || last.state === TaskState.TASK_STATE_INPUT_REQUIRED) return last;
    }
  } catch (err) {
    // Once the remote task exists, a lost connection is no reason to send the work again.
    if (ctx.signal.aborted || !remote.id || !isLost(err)) throw err;
    ctx.log.warn({ err, remoteTask: remote.id }, 'the A2A stream broke off; reading the remote task until it settles');
  } finally {
    ctx.signal.removeEventListener('abort', stop);
  }
  return last?.final || last?.state === TaskState.TASK_STATE_INPUT_REQUIRED ? last : undefined;
}

/** The remote task, read until it is final or asks; a retryable failure if it cannot be read for SETTLE_MS. */
async function settle(client: Client, remote: Remote, pending: Map<string, { name: string; parts: Part[] }>, ctx: ExecutorContext,
  serviceParameters: Record<string, string>, url: string): Promise<Outcome> {
  if (!remote.id) throw new RetryableError(`the A2A agent at ${url} ended the stream before it named a task`);
  const deadline = Date.now() + SETTLE_MS;
  let lastError: unknown;
  for (;;) {
    try {
      const task = await client.getTask({ tenant: '', id: remote.id, historyLength: 0 }, { serviceParameters, signal: ctx.signal });
      const outcome = await follow({ payload: { $case: 'task', value: task } }, remote, pending, ctx);
      if (outcome?.final || outcome?.state === TaskState.TASK_STATE_INPUT_REQUIRED) return outcome;
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new RetryableError(`lost the A2A agent at ${url} while its task ${remote.id} ran${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await sleep(SETTLE_EVERY_MS, undefined, { signal: ctx.signal });
  }
}

function send(parts: Part[], remote: Remote): SendMessageRequest {
  const message: A2AMessage = {
    messageId: crypto.randomUUID(), contextId: remote.contextId, taskId: remote.id ?? '', role: Role.ROLE_USER,
    parts, metadata: {}, extensions: [], referenceTaskIds: [],
  };
  return { tenant: '', message, configuration: undefined, metadata: {} };
}

/** The task as an A2A message: its title and description as text, its payload as data, its inputs as files. */
function requestParts(task: Task, inputs: ResolvedArtifact[]): Part[] {
  const parts = [textPart(task.description ? `${task.title}\n\n${task.description}` : task.title)];
  const { task_type: _type, ...payload } = task.payload;
  if (Object.keys(payload).length) parts.push(dataPart(payload));
  for (const input of inputs) {
    if (input.uri) parts.push({ content: { $case: 'url', value: input.uri }, metadata: undefined, filename: input.name, mediaType: input.media_type });
    else if (input.json !== undefined) parts.push({ ...dataPart(input.json), filename: input.name });
    else parts.push({ content: { $case: 'raw', value: input.content ?? Buffer.alloc(0) }, metadata: undefined, filename: input.name, mediaType: input.media_type });
  }
  return parts;
}

const textIn = (message: A2AMessage | undefined) => message?.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n') || undefined;

/** One event of the remote task: remembered, reported as progress, or collected as an artifact. */
async function follow(event: StreamResponse, remote: Remote, pending: Map<string, { name: string; parts: Part[] }>, ctx: ExecutorContext): Promise<Outcome | undefined> {
  const payload = event.payload;
  if (!payload) return undefined;
  if (payload.$case === 'message') return { state: TaskState.TASK_STATE_COMPLETED, text: textIn(payload.value), final: true };
  if (payload.$case === 'task') {
    remote.id = payload.value.id;
    remote.contextId = payload.value.contextId;
    for (const a of payload.value.artifacts) pending.set(a.artifactId, { name: a.name || a.artifactId, parts: a.parts });
    const state = payload.value.status?.state;
    return state === undefined ? undefined : { state, text: textIn(payload.value.status?.message), final: finalStates.includes(state) };
  }
  if (payload.$case === 'artifactUpdate' && payload.value.artifact) {
    const a = payload.value.artifact;
    const known = payload.value.append ? pending.get(a.artifactId) : undefined;
    pending.set(a.artifactId, { name: a.name || known?.name || a.artifactId, parts: [...(known?.parts ?? []), ...a.parts] });
    return undefined;
  }
  if (payload.$case === 'statusUpdate' && payload.value.status) {
    const { state } = payload.value.status;
    const text = textIn(payload.value.status.message);
    if (state === TaskState.TASK_STATE_WORKING && text) await ctx.progress(text);
    return { state, text, final: finalStates.includes(state) };
  }
  return undefined;
}

/** A remote artifact as a Baton one: one data part as JSON, text parts as text, a URL as a link, else bytes. */
async function attach(ctx: ExecutorContext, name: string, parts: Part[]): Promise<void> {
  const [first] = parts;
  if (parts.length === 1 && first?.content?.$case === 'data') return void await ctx.artifact(name, { json: first.content.value });
  if (parts.length === 1 && first?.content?.$case === 'url') return void await ctx.artifact(name, { uri: first.content.value, mediaType: first.mediaType || undefined });
  if (parts.every((p) => p.content?.$case === 'text')) {
    return void await ctx.artifact(name, parts.map((p) => (p.content as { value: string }).value).join(''), { mediaType: first?.mediaType || 'text/plain' });
  }
  const bytes = Buffer.concat(parts.map((p) => (p.content?.$case === 'raw' ? Buffer.from(p.content.value)
    : p.content?.$case === 'text' ? Buffer.from(p.content.value) : Buffer.from(JSON.stringify(p.content?.value ?? null)))));
  await ctx.artifact(name, bytes, { mediaType: first?.mediaType || 'application/octet-stream' });
}
