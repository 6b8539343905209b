/**
 * What the web board reads and does, as one identity: an agent (its token; row-level security shows it
 * exactly what it may see) or the operator (the secret key; everything). Reads are plain queries on the
 * tables and views the database guards; every action is the RPC or client call the CLI makes, so a
 * refusal is the database's own, with its BT code and hint.
 */
import { z } from 'zod';
import type { AdminClient } from '../client/admin.js';
import { setScheduleEnabled, removeSchedule } from '../client/admin.js';
import type { BatonClient } from '../client/agent.js';
import type { BatonDb } from '../client/connection.js';
import { fromHex } from '../client/artifacts.js';
import { parseInput, unwrap, unwrapOne } from '../client/connection.js';
import { refusalOf } from '../errors.js';
import { AgentPresence, DeadLetter, Message, RecurringHandoff, ChainUsage, SpendRow, Task, TaskBudget, TaskEvent, TaskRun, TaskStatus } from '../schemas.js';

export type BoardIdentity =
  | { kind: 'operator'; admin: AdminClient }
  | { kind: 'agent'; client: BatonClient };

/** A row of the task table: what a list shows, without payloads and results. */
const listColumns = 'id,title,status,priority,from_agent,to_agent,claimed_by,required_capabilities,progress_percent,waiting_on,created_at,updated_at,completed_at,parent_task_id,root_task_id';
const TaskRow = z.object({
  id: z.uuid(), title: z.string(), status: TaskStatus, priority: z.string(), from_agent: z.string(), to_agent: z.string().nullable(),
  claimed_by: z.string().nullable(), required_capabilities: z.array(z.string()), progress_percent: z.number().nullable(), waiting_on: z.number(),
  created_at: z.string(), updated_at: z.string(), completed_at: z.string().nullable(),
  parent_task_id: z.uuid().nullable(), root_task_id: z.uuid().nullable(),
});
export type TaskRow = z.infer<typeof TaskRow>;

const lineageColumns = 'id,parent_task_id,root_task_id,depth,title,status,from_agent,to_agent,producer,depends_on,dependency_mode,created_at,completed_at';
const LineageNode = z.object({
  id: z.uuid(), parent_task_id: z.uuid().nullable(), root_task_id: z.uuid().nullable(), depth: z.number(), title: z.string(),
  status: TaskStatus, from_agent: z.string(), to_agent: z.string().nullable(), producer: z.string().nullable(),
  depends_on: z.array(z.uuid()), dependency_mode: z.string(), created_at: z.string(), completed_at: z.string().nullable(),
});
const ArtifactInfo = z.object({
  name: z.string(), media_type: z.string(), size_bytes: z.number().nullable(), sha256: z.string().nullable(),
  uri: z.string().nullable(), producer: z.string(), created_at: z.string(),
});
const Count = z.object({ status: TaskStatus, tasks: z.number(), since: z.string().nullable() });
const Minute = z.object({ minute: z.string(), completed: z.number(), failed: z.number(), withdrawn: z.number() });
const Held = z.object({ id: z.uuid(), title: z.string(), status: TaskStatus, claimed_by: z.string() });

export const sortable = ['created_at', 'updated_at', 'priority', 'status', 'title'] as const;
export const TaskQuery = z.object({
  status: TaskStatus.optional(),
  agent: z.string().max(200).optional(),
  capability: z.string().max(200).optional(),
  q: z.string().max(200).optional(),
  sort: z.enum(sortable).default('created_at'),
  dir: z.enum(['asc', 'desc']).default('desc'),
  page: z.coerce.number().int().min(0).max(100_000).default(0),
  size: z.coerce.number().int().min(1).max(200).default(50),
});
export type TaskQuery = z.input<typeof TaskQuery>;

/** PostgREST's filter grammar treats these as syntax; a value holding one is quoted. */
const quoted = (value: string) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;

/** An id that is not one (short, mistyped) names no task: not found, as for any other. */
function mustBeTaskId(id: string, message: string): void {
  if (!z.uuid().safeParse(id).success) throw refusalOf('BT002', { message, hint: 'Task ids are UUIDs; copy the whole id from the list.' });
}

export class BoardData {
  readonly db: BatonDb;

  constructor(readonly identity: BoardIdentity) {
    this.db = identity.kind === 'operator' ? identity.admin.db : identity.client.db;
  }

  /** Who the board is: the operator, or the agent whose token it holds. */
  get who(): { kind: 'operator' | 'agent'; id: string | null } {
    return this.identity.kind === 'operator' ? { kind: 'operator', id: null } : { kind: 'agent', id: this.identity.client.agentId };
  }

  async overview() {
    const [counts, minutes, agents] = await Promise.all([
      unwrap(this.db.from('task_counts').select('*'), z.array(Count)),
      unwrap(this.db.from('task_throughput').select('*').order('minute'), z.array(Minute)),
      unwrap(this.db.from('agent_presence').select('id,is_online'), z.array(z.object({ id: z.string(), is_online: z.boolean() }))),
    ]);
    // Open tasks are all counted; finished ones since the time task_counts says (a day ago).
    const byStatus = Object.fromEntries(TaskStatus.options.map((s) => [s, counts.find((c) => c.status === s)?.tasks ?? 0]));
    const finishedSince = counts.find((c) => c.since)?.since ?? null;
    return { byStatus, finishedSince, lastHour: minutes, agents: { total: agents.length, online: agents.filter((a) => a.is_online).length } };
  }

  /** Every agent with what it holds now. */
  async agents() {
    const [agents, held] = await Promise.all([
      unwrap(this.db.from('agent_presence').select('*').order('id'), z.array(AgentPresence)),
      unwrap(this.db.from('task_handoffs').select('id,title,status,claimed_by').in('status', ['claimed', 'in_progress', 'input_required'])
        .not('claimed_by', 'is', null).order('created_at').limit(2000), z.array(Held)),
    ]);
    return agents.map((a) => ({ ...a, holds: held.filter((t) => t.claimed_by === a.id) }));
  }

  /**
   * One page of tasks, filtered and sorted in the database. The total is the planner's estimate on a
   * large result (counting a million rows costs more than the page) and an exact count below 20,000.
   * The page itself is asked for without a count: PostgREST refuses a range past the count it would
   * give (PGRST103), and a planner's estimate can be far below the rows that are there.
   */
  async tasks(query: TaskQuery) {
    const q = parseInput(TaskQuery, query);
    const matching = (columns: string, count?: 'planned' | 'exact', head = false) => {
      let request = this.db.from('task_handoffs').select(columns, { count, head });
      if (q.status) request = request.eq('status', q.status);
      if (q.agent) request = request.or(['from_agent', 'to_agent', 'claimed_by'].map((c) => `${c}.eq.${quoted(q.agent!)}`).join(','));
      if (q.capability) request = request.contains('required_capabilities', [q.capability]);
      if (q.q) request = request.ilike('title', `%${q.q.replace(/[%_\\]/g, (c) => `\\${c}`)}%`);
      return request;
    };
    let request = matching(listColumns).order(q.sort, { ascending: q.dir === 'asc' });
    if (q.sort !== 'created_at') request = request.order('created_at', { ascending: false });
    // One row past the page says whether another follows.
    const [read, planned] = await Promise.all([
      unwrap(request.order('id').range(q.page * q.size, q.page * q.size + q.size), z.array(TaskRow)),
      unwrap(matching('id', 'planned', true).then((r) => ({ ...r, data: r.count })), z.number().nullable()),
    ]);
    const rows = read.slice(0, q.size);
    if (planned !== null && planned >= 20_000) {
      // Too many to count on every page: the planner's estimate, which the rows themselves correct. The
      // last page knows the total; a page with more after it knows the total is beyond it.
      const seen = q.page * q.size + rows.length;
      if (read.length <= q.size && (rows.length > 0 || q.page === 0)) return { rows, total: seen, exact: true, page: q.page, size: q.size };
      return { rows, total: Math.max(planned, read.length > q.size ? seen + 1 : 0), exact: false, page: q.page, size: q.size };
    }
    const total = await unwrap(matching('id', 'exact', true).then((r) => ({ ...r, data: r.count })), z.number());
    return { rows, total, exact: true, page: q.page, size: q.size };
  }

  /** A task with its history, thread, artifacts, the chain it belongs to and its retries. */
  async task(id: string) {
    const missing = { message: `no task ${id} that this board may see`, hint: 'It may belong to agents this identity cannot see.' };
    mustBeTaskId(id, missing.message);
    const task = await unwrapOne(this.db.from('task_handoffs').select('*').eq('id', id).maybeSingle(), Task, missing);
    const [events, messages, artifacts, chain, retries, usage, under] = await Promise.all([
      unwrap(this.db.from('task_events').select('*').eq('task_id', id).order('id'), z.array(TaskEvent)),
      unwrap(this.db.from('agent_messages').select('*').eq('task_id', id).order('created_at').limit(500), z.array(Message)),
      unwrap(this.db.from('task_artifacts').select('name,media_type,size_bytes,sha256,uri,producer,created_at').eq('task_id', id).order('name'), z.array(ArtifactInfo)),
      unwrap(this.db.from('task_lineage').select(lineageColumns).eq('root_task_id', task.root_task_id ?? task.id).order('created_at').limit(300), z.array(LineageNode)),
      unwrap(this.db.from('task_handoffs').select('id,status,created_at').eq('retry_of', id).order('created_at'), z.array(z.object({ id: z.uuid(), status: TaskStatus, created_at: z.string() }))),
      unwrap(this.db.from('task_runs').select('*').eq('task_id', id).order('attempt').order('model'), z.array(TaskRun)),
      unwrap(this.db.rpc('chain_usage', { p_task_id: id }), z.array(ChainUsage)),
    ]);
    const budget = task.budget_id ? await unwrap(this.db.rpc('task_budget', { p_task_id: id }), TaskBudget.nullable()) : null;
    const { claim_token: _secret, ...shown } = task;
    // The chain's spend is shown where it is more than the task's own.
    const more = under.some((r) => r.tasks > 1) || under.length > new Set(usage.map((r) => r.model)).size;
    return { task: shown, events, messages, artifacts, chain, retries, usage, chainUsage: more ? under : [], budget };
  }

  /** An artifact's bytes, hash-checked where this identity's client can check them. */
  async artifact(taskId: string, name: string): Promise<{ mediaType: string; content: Buffer | null; uri: string | null }> {
    mustBeTaskId(taskId, `task ${taskId} has no artifact "${name}"`);
    if (this.identity.kind === 'agent') {
      const a = await this.identity.client.artifact(taskId, name);
      return { mediaType: a.media_type, content: a.content, uri: a.uri };
    }
    const a = await unwrapOne(this.db.from('task_artifacts').select('media_type,content,uri,sha256').eq('task_id', taskId).eq('name', name).maybeSingle(),
      z.object({ media_type: z.string(), content: z.string().nullable(), uri: z.string().nullable(), sha256: z.string().nullable() }),
      { message: `task ${taskId} has no artifact "${name}"`, hint: 'The task page lists its artifacts.' });
    return { mediaType: a.media_type, content: a.content === null ? null : fromHex(a.content), uri: a.uri };
  }

  async deadLetters() {
    return unwrap(this.db.from('dead_letters').select('*').order('failed_at', { ascending: false }).limit(200), z.array(DeadLetter));
  }

  /** What runs spent in the last `days` days, by UTC day, agent and model (what this identity may see). */
  async spend(days = 14) {
    return unwrap(this.db.rpc('spend_report', { p_since: new Date(Date.now() - days * 86_400_000).toISOString() }), z.array(SpendRow));
  }

  async schedules() {
    return unwrap(this.db.from('recurring_handoffs').select('*').order('name'), z.array(RecurringHandoff));
  }

  /** The actions a person may try from the board; the database decides whether this identity may. */
  async act(action: BoardAction): Promise<unknown> {
    const a = parseInput(BoardAction, action);
    switch (a.action) {
      case 'retry':
        return this.identity.kind === 'operator' ? this.identity.admin.retry(a.task) : this.identity.client.retry(a.task);
      case 'cancel':
        return this.asAgent().cancel(a.task, a.reason);
      case 'reassign':
        return this.asAgent().reassign(a.task, a.to, a.reason);
      case 'answer':
        return this.asAgent().answer(a.task, a.text);
      case 'pause':
      case 'resume': {
        const changed = await setScheduleEnabled(this.db, a.schedule, a.action === 'resume');
        if (!changed) throw refusalOf('BT002', { message: `no schedule named "${a.schedule}"`, hint: 'The schedules page lists them.' });
        return changed;
      }
      case 'remove':
        return { removed: await removeSchedule(this.db, a.schedule) };
    }
  }

  /**
   * Cancel, reassign and answer are the sender's, and the operator sends nothing: it gets the
   * database's own refusal rather than one made up here.
   */
  private asAgent(): Pick<BatonClient, 'cancel' | 'reassign' | 'answer'> {
    if (this.identity.kind === 'agent') return this.identity.client;
    const db = this.db;
    const call = (fn: 'cancel_task' | 'reassign_task' | 'answer_question', args: Record<string, unknown>) =>
      unwrap(db.rpc(fn, args as never).single(), Task);
    return {
      cancel: (task, reason) => call('cancel_task', { p_task_id: task, p_reason: reason ?? null }),
      reassign: (task, to, reason) => call('reassign_task', { p_task_id: task, p_to_agent: to, p_reason: reason ?? null }),
      answer: (task, text) => call('answer_question', { p_task_id: task, p_answer: text }),
    };
  }
}

const text = z.string().trim().min(1).max(10_000);
export const BoardAction = z.discriminatedUnion('action', [
  z.object({ action: z.literal('retry'), task: z.uuid() }),
  z.object({ action: z.literal('cancel'), task: z.uuid(), reason: text.optional() }),
  z.object({ action: z.literal('reassign'), task: z.uuid(), to: z.string().trim().min(1).max(200), reason: text.optional() }),
  z.object({ action: z.literal('answer'), task: z.uuid(), text }),
  z.object({ action: z.enum(['pause', 'resume', 'remove']), schedule: z.string().min(1).max(200) }),
]);
export type BoardAction = z.input<typeof BoardAction>;

