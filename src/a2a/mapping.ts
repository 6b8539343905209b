/**
 * Baton in A2A's terms and back: statuses onto task states, a task with its artifacts and thread onto an
 * A2A task, and an A2A message onto a hand-off (text parts the title and description, data parts the
 * payload, file parts named files in the payload).
 */
import { Role, TaskState, type Artifact as A2AArtifact, type Message as A2AMessage, type Part, type Task as A2ATask } from '@a2a-js/sdk';
import type { ResolvedArtifact } from '../client/artifacts.js';
import { BudgetInput, finalStatuses, type HandoffInput, type Message, type Task, type TaskEvent, type TaskStatus } from '../schemas.js';

export const stateOf: Record<TaskStatus, TaskState> = {
  pending: TaskState.TASK_STATE_SUBMITTED,
  claimed: TaskState.TASK_STATE_WORKING,
  in_progress: TaskState.TASK_STATE_WORKING,
  input_required: TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
};

/** A2A's final task states: those Baton's final statuses map onto. */
export const finalStates: readonly TaskState[] = finalStatuses.map((status) => stateOf[status]);

/** The Baton statuses an A2A state stands for (a ListTasks filter). */
export const statusesOf = (state: TaskState): TaskStatus[] =>
  (Object.entries(stateOf) as Array<[TaskStatus, TaskState]>).filter(([, s]) => s === state).map(([status]) => status);

export const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
export const dataPart = (data: unknown): Part => ({ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' });

export function message(role: Role, parts: Part[], ids: { messageId: string; taskId: string; contextId: string }, metadata?: Record<string, unknown>): A2AMessage {
  return { ...ids, role, parts, metadata, extensions: [], referenceTaskIds: [] };
}

/** The A2A context of a task: its chain (a root task's own id). */
export const contextOf = (task: Pick<Task, 'id' | 'root_task_id'>) => task.root_task_id ?? task.id;

/** What the task's status says in words, as A2A puts it in the status message. */
function statusText(task: Task): string | null {
  if (task.status === 'input_required') return task.status_reason;
  if (task.status === 'in_progress' || task.status === 'claimed') return task.progress_message;
  if (task.status === 'completed') return (task.result as { summary?: string } | null)?.summary ?? null;
  return task.status_reason;
}

export function a2aStatusOf(task: Task, event?: Pick<TaskEvent, 'id' | 'at'>): NonNullable<A2ATask['status']> {
  const text = statusText(task);
  const ids = { messageId: `${task.id}:status:${event?.id ?? task.updated_at}`, taskId: task.id, contextId: contextOf(task) };
  return {
    state: stateOf[task.status],
    message: text ? message(Role.ROLE_AGENT, [textPart(text)], ids) : undefined,
    // RFC 3339 in UTC with a Z, as A2A's examples write it (Postgres prints +00:00).
    timestamp: new Date(event?.at ?? task.updated_at).toISOString(),
  };
}

const isJson = (mediaType: string) => /^application\/([a-z.+-]+\+)?json\b/.test(mediaType);

/**
 * A Baton artifact as an A2A artifact. A Baton artifact is a named file, so it stays one: its bytes as a
 * raw part (text included), a link as a URL part, each with its file name and media type; JSON alone
 * becomes a data part (still named), so that structured results arrive structured.
 */
export function artifactOf(taskId: string, a: ResolvedArtifact): A2AArtifact {
  let part: Part;
  if (a.uri) part = { content: { $case: 'url', value: a.uri }, metadata: undefined, filename: a.name, mediaType: a.media_type };
  else if (isJson(a.media_type) && a.json !== undefined) part = { ...dataPart(a.json), filename: a.name };
  else part = { content: { $case: 'raw', value: a.content ?? Buffer.alloc(0) }, metadata: undefined, filename: a.name, mediaType: a.media_type };
  return {
    artifactId: `${taskId}:${a.name}`, name: a.name, description: '', parts: [part], extensions: [],
    metadata: { sha256: a.sha256, size_bytes: a.size_bytes, media_type: a.media_type, producer: a.producer },
  };
}

/**
 * The task's result as an artifact of its own ("result"): its summary as a text part first (what a
 * caller that reads text, such as an LLM, reads), then the whole Baton result as data.
 */
export function resultArtifact(task: Task): A2AArtifact | undefined {
  if (!task.result) return undefined;
  const summary = typeof task.result.summary === 'string' && task.result.summary ? [textPart(task.result.summary)] : [];
  return {
    artifactId: `${task.id}:result`, name: 'result', description: 'The Baton result: its summary as text, then {status, summary, artifacts, metrics} as data',
    parts: [...summary, dataPart(task.result)], extensions: [], metadata: undefined,
  };
}

/** The caller's message that made the task, as it was handed off. */
export function requestMessage(task: Task): A2AMessage {
  const text = task.description ? `${task.title}\n\n${task.description}` : task.title;
  const parts = [textPart(text)];
  if (Object.keys(task.payload).length > 0) parts.push(dataPart(task.payload));
  // The caller's own message id, as it sent it (the hand-off keeps it in its idempotency key).
  const sent = task.idempotency_key?.startsWith(messageKeyPrefix) ? task.idempotency_key.slice(messageKeyPrefix.length) : undefined;
  return message(Role.ROLE_USER, parts, { messageId: sent ?? `${task.id}:request`, taskId: task.id, contextId: contextOf(task) });
}

/** The thread on a task (questions, answers, progress) as A2A messages, oldest first. */
export function historyOf(task: Task, messages: Message[]): A2AMessage[] {
  const thread = messages.filter((m) => m.kind !== 'result').map((m) => {
    const body = m.body as { text?: unknown };
    const parts = typeof body?.text === 'string' ? [textPart(body.text)] : [dataPart(m.body)];
    return message(m.from_agent === task.from_agent ? Role.ROLE_USER : Role.ROLE_AGENT, parts,
      { messageId: m.id, taskId: task.id, contextId: contextOf(task) }, { kind: m.kind, from: m.from_agent, at: m.created_at });
  });
  return [requestMessage(task), ...thread];
}

export function taskOf(task: Task, artifacts: ResolvedArtifact[], messages: Message[], historyLength?: number): A2ATask {
  const history = historyOf(task, messages);
  const result = resultArtifact(task);
  return {
    id: task.id,
    contextId: contextOf(task),
    status: a2aStatusOf(task),
    artifacts: [...artifacts.map((a) => artifactOf(task.id, a)), ...(result ? [result] : [])],
    history: historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength),
    metadata: { baton: { status: task.status, from_agent: task.from_agent, to_agent: task.to_agent, claimed_by: task.claimed_by, attempts: task.attempts } },
  };
}

/** A hand-off made from an A2A message keeps the message's id as its idempotency key, after this. */
const messageKeyPrefix = 'a2a:';

export class BadMessage extends Error {}
/** A message whose parts are all of media types this server does not read (A2A's ContentTypeNotSupported). */
export class UnreadableContent extends BadMessage {}

/** What Baton reads from a message, as its cards say (defaultInputModes): other files ride along in payload.files. */
export const inputModes = ['text/plain', 'application/json'];

/**
 * An A2A message as a hand-off. The first line of its text is the title (at most 200 characters), all of
 * it the description; data parts are the payload (one object as it is; several, or other values, under
 * `parts`); file parts go into payload.files as {name, media_type, url} or {name, media_type, base64}.
 */
export function handoffOf(msg: A2AMessage): Omit<HandoffInput, 'to'> {
  const texts = msg.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
  const data = msg.parts.flatMap((p) => (p.content?.$case === 'data' ? [p.content.value as unknown] : []));
  const files = msg.parts.flatMap((p): Array<Record<string, string | null>> => {
    if (p.content?.$case === 'url') return [{ name: p.filename || null, media_type: p.mediaType || null, url: p.content.value }];
    if (p.content?.$case === 'raw') return [{ name: p.filename || null, media_type: p.mediaType || null, base64: Buffer.from(p.content.value).toString('base64') }];
    return [];
  });
  const text = texts.join('\n\n').trim();
  const firstLine = text.split('\n')[0]?.trim() ?? '';
  if (!firstLine && data.length === 0) {
    if (files.length) {
      throw new UnreadableContent(`the message has only files of types this agent does not read (${[...new Set(files.map((f) => f.media_type ?? 'no type'))].join(', ')}): `
        + `send a text or JSON part (${inputModes.join(', ')}) that says what the work is, with the files beside it`);
    }
    throw new BadMessage('the message has no text part and no data part: say what the work is');
  }
  const single = data.length === 1 && data[0] !== null && typeof data[0] === 'object' && !Array.isArray(data[0]);
  const payload: Record<string, unknown> = single ? { ...(data[0] as Record<string, unknown>) } : data.length ? { parts: data } : {};
  if (files.length) payload.files = files;
  // A budget for the task and everything under it, in the message's metadata: {"budget": {"tokens", "usd", "onSpent"}}.
  const asked = (msg.metadata as Record<string, unknown> | undefined)?.budget;
  const budget = asked === undefined ? undefined : BudgetInput.safeParse(asked);
  if (budget && !budget.success) throw new BadMessage('metadata.budget must be {"tokens": a whole number, "usd": an amount, "onSpent": "ask" or "fail"}, each optional');
  return {
    ...(budget ? { budget: budget.data } : {}),
    title: (firstLine || 'work handed off over A2A').slice(0, 200),
    description: text.length > firstLine.length ? text : undefined,
    payload,
    idempotencyKey: msg.messageId ? `${messageKeyPrefix}${msg.messageId}` : undefined,
  };
}

/** The text an A2A message (or artifact) carries: its text parts, joined. */
export const textOf = (msg: Pick<A2AMessage, 'parts'>) => msg.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n').trim();
