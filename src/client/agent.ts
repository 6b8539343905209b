/** The client an agent uses: every call acts as the agent whose token it holds. */
import type { Database, Json } from '../database.types.js';
import type { BatonDb } from './connection.js';
import { decodeJwt } from 'jose';
import { z } from 'zod';
import { AmbiguousIdError, type BatonError, refusalOf, toBatonError, ValidationError } from '../errors.js';
import {
  Agent, AgentPresence, AgentProfile, Artifact, BatchHandoff, BatchOutcome, ClaimCheck, LineageRow, ClaimNextOptions, SweepReport, MessageKind, ClaimOptions, HandoffInput, Message, MessageInput, Task, TaskEvent,
  FanOutJoin, Incarnation, TaskId, TaskResult, TaskStatus, RunUsage, TaskRun, ChainUsage, Budget, BudgetInput, TaskBudget, SpendRow,
} from '../schemas.js';
import { lazy } from '../on-demand.js';
import {
  guessMediaType, resolveArtifact, toBytes, toHex,
  type ArtifactContent, type LinkedArtifact, type ResolvedArtifact,
} from './artifacts.js';
import { agentApiKey, asJson, connect, parseInput, unwrap, unwrapOne, type AgentKeyOptions } from './connection.js';

export interface AgentClientOptions extends AgentKeyOptions {
  url: string;
  /** The agent's access token, as printed by `baton agent create`. */
  token: string;
}

export type TaskBox = 'mine' | 'sent' | 'pending' | 'all';

export interface TaskFilter {
  /** mine: addressed to or held by me; sent: sent by me; pending: claimable by me; all: everything I can see. */
  box?: TaskBox;
  status?: TaskStatus[];
  limit?: number;
  /** How many to pass over first, for paging (not for `mine`, which reads the open tasks from the front). */
  offset?: number;
}

const Tasks = lazy(() => z.array(Task));
const TaskRuns = lazy(() => z.array(TaskRun));
const ChainUsages = lazy(() => z.array(ChainUsage));
const SpendRows = lazy(() => z.array(SpendRow));
const MaybeTaskBudget = lazy(() => TaskBudget.nullable());
// The answers' schemas, made once: zod compiles a schema on its first parse, so one made per call
// costs more than the parse itself.
const BatchHandoffs = lazy(() => z.array(BatchHandoff));
const BatchOutcomes = lazy(() => z.array(BatchOutcome));
const ReportAndClaimAnswer = lazy(() => z.object({
  outcomes: BatchOutcomes, claimed: Tasks,
  claim_error: z.object({ code: z.string(), message: z.string(), hint: z.string().nullable() }).nullable(),
}));
const ClaimedRows = lazy(() => z.array(z.looseObject({ id: z.string(), claim_token: z.string().nullable(), status: z.string() })));
const FanOutAnswer = lazy(() => z.object({ tasks: z.array(z.uuid()), join: z.uuid() }));
const Artifacts = lazy(() => z.array(Artifact));
const ArtifactWithContent = lazy(() => Artifact.extend({ content: z.string().nullable() }));
const ArtifactsWithContent = lazy(() => z.array(ArtifactWithContent));
const LineageRows = lazy(() => z.array(LineageRow));
const TaskSummaries = lazy(() => z.array(z.object({ id: z.string(), title: z.string(), status: z.string() })));
const AgentPresences = lazy(() => z.array(AgentPresence));
const ClaimChecks = lazy(() => z.array(ClaimCheck));
const TaskEvents = lazy(() => z.array(TaskEvent));
const Messages = lazy(() => z.array(Message));
const Agents = lazy(() => z.array(Agent));

/** Outcomes as report_outcomes takes them. */
const outcomesJson = (outcomes: Outcome[]) => asJson(outcomes.map((o) => ('error' in o
  ? { task_id: o.taskId, claim_token: o.claimToken, error: o.error, retry: o.retry ?? false, problems: o.problems ?? null }
  : { task_id: o.taskId, claim_token: o.claimToken, result: o.result ?? { status: 'success' } })));

/** A time as the RPCs take it. */
const isoTime = (value: Date | string | undefined): string | undefined => (value instanceof Date ? value.toISOString() : value);

/**
 * A hand-off as the database names its fields, with only the fields given: the database's defaults are
 * the defaults. The one mapping of a hand-off, for a single one (as handoff_task's p_… arguments), many
 * (handoff_tasks) and a fan-out (fan_out).
 */
function handoffFields(input: HandoffInput): Record<string, Json> {
  const t = parseInput(HandoffInput, input);
  const fields = {
    title: t.title, to_agent: t.to, description: t.description, priority: t.priority, payload: t.payload,
    required_capabilities: t.requiredCapabilities, deadline: isoTime(t.deadline), max_attempts: t.maxAttempts,
    parent_task_id: t.parentTaskId, idempotency_key: t.idempotencyKey, allow_offline: t.allowOffline,
    lease_seconds: t.leaseSeconds, expected_outputs: t.expectedOutputs, input_artifacts: t.inputArtifacts,
    depends_on: t.dependsOn, dependency_mode: t.dependencyMode, on_dependency_failure: t.onDependencyFailure, run_at: isoTime(t.runAt),
    budget_tokens: t.budget?.tokens, budget_usd: t.budget?.usd, on_budget_spent: t.budget?.onSpent,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined && value !== null)) as Record<string, Json>;
}

const artifactColumns = 'id, task_id, name, media_type, size_bytes, sha256, uri, producer, created_at';

/** The task RPCs that take a task id and answer with the task. */
type TaskRpc = 'answer_question' | 'ask_question' | 'cancel_task' | 'complete_task' | 'decline_task' | 'fail_task'
  | 'reassign_task' | 'reject_task' | 'release_task' | 'report_progress' | 'start_task';

/** One outcome for `reportOutcomes`: a completion with its result, or a failure with its error. */
export type Outcome =
  | { taskId: string; claimToken: ClaimToken; result?: TaskResult }
  | { taskId: string; claimToken: ClaimToken; error: string; retry?: boolean; problems?: Array<{ path: string; message: string }> };

/** The claim token a claim returned; null where the caller holds none (the database then says why). */
export type ClaimToken = string | null;

export function createBatonClient(options: AgentClientOptions): BatonClient {
  return new BatonClient(options);
}

export class BatonClient {
  readonly agentId: string;
  readonly db: BatonDb;
  /**
   * The process this client acts for (begin_incarnation), once a daemon has begun: every request then
   * names it (X-Baton-Incarnation), so the database lets it act only on its own claims, and refuses its
   * claims once a later process has begun (BT016). Unset, the client acts by hand.
   */
  incarnation: string | undefined;
  constructor(options: AgentClientOptions) {
    this.agentId = agentIdOf(options.token);
    this.db = connect({
      url: options.url, apiKey: agentApiKey(options), accessToken: options.token,
      headers: () => (this.incarnation ? { 'x-baton-incarnation': this.incarnation } : undefined),
    });
  }

  /** Hands off one task. Only the fields given are sent: the database's defaults are the defaults. */
  async handoff(input: HandoffInput): Promise<Task> {
    const args = Object.fromEntries(Object.entries(handoffFields(input)).map(([name, value]) => [`p_${name}`, value]));
    return unwrap(this.db.rpc('handoff_task', args as { p_title: string }), Task);
  }

  /**
   * From within a task this agent holds (or sent), hands off several sub-tasks and the join task that
   * depends on them, in one transaction. The join: `first` (the first success releases it and the
   * others are cancelled), `all` (it waits for every one) or `judge` (as all, handed to any agent with
   * the judging capability). First and all joins come back to this agent, whose daemon runs them with
   * a built-in executor unless it has one for task_type "baton.join".
   */
  async fanOut(parentTaskId: string, inputs: Array<Omit<HandoffInput, 'parentTaskId' | 'dependsOn'>>, join: FanOutJoin = { mode: 'all' }): Promise<{ tasks: string[]; join: string }> {
    const tasks = inputs.map(handoffFields);
    const j = parseInput(FanOutJoin, join);
    return unwrap(this.db.rpc('fan_out', {
      p_parent_task_id: parseInput(TaskId, parentTaskId),
      p_tasks: asJson(tasks),
      p_join: asJson({
        mode: j.mode, title: j.title, to_agent: j.to, capability: j.capability, payload: j.payload,
        expected_outputs: j.expectedOutputs, on_failure: j.onFailure,
      }),
    }), FanOutAnswer);
  }

  /** The tasks a task depends on, in the order it names them, with their results. */
  async dependencies(taskId: string): Promise<Task[]> {
    return unwrap(this.db.rpc('task_dependencies', { p_task_id: parseInput(TaskId, taskId) }), Tasks);
  }

  /** A new attempt at a failed task this agent sent: a new task with the same work, linked by retry_of. */
  async retry(taskId: string): Promise<Task> {
    return unwrap(this.db.rpc('retry_task', { p_task_id: parseInput(TaskId, taskId) }).single(), Task);
  }

  /**
   * Hands off many tasks in one request (up to 1000), each by the same rules as `handoff`. A refused
   * one comes back with its index and the reason; the others are made.
   */
  async handoffMany(inputs: HandoffInput[]): Promise<BatchHandoff[]> {
    const tasks = inputs.map(handoffFields);
    return unwrap(this.db.rpc('handoff_tasks', { p_tasks: asJson(tasks) }), BatchHandoffs);
  }

  /**
   * Completes or fails many held tasks in one request: `{taskId, claimToken, result}` completes one,
   * `{taskId, claimToken, error, retry?, problems?}` fails one. Each is judged on its own, by the same
   * rules as `complete` and `fail`; a refused one comes back with its code and the rest go through.
   */
  async reportOutcomes(outcomes: Outcome[]): Promise<BatchOutcome[]> {
    if (outcomes.length === 0) return [];
    return unwrap(this.db.rpc('report_outcomes', { p_outcomes: outcomesJson(outcomes) }), BatchOutcomes);
  }

  /**
   * Reports outcomes as `reportOutcomes` does, then claims (and starts) up to `claim` tasks, in one
   * request: what a daemon with free slots sends when work finishes. A refused claim comes back as
   * `claimError` and never affects the outcomes.
   */
  async reportAndClaim(outcomes: Outcome[], { claim, capabilities, leaseSeconds }: { claim: number; capabilities?: string[]; leaseSeconds?: number }): Promise<{ outcomes: BatchOutcome[]; claimed: Task[]; claimError: BatonError | null }> {
    const answer = await unwrap(this.db.rpc('report_and_claim', {
      p_outcomes: outcomesJson(outcomes), p_claim: claim, p_capabilities: capabilities, p_lease_seconds: leaseSeconds,
    }), ReportAndClaimAnswer);
    return { outcomes: answer.outcomes, claimed: answer.claimed, claimError: answer.claim_error ? toBatonError(answer.claim_error) : null };
  }

  /** Offers a task to every agent holding all of `requiredCapabilities`. */
  async broadcast(input: Omit<HandoffInput, 'to'>): Promise<Task> {
    return this.handoff({ ...input, to: null });
  }

  async claim(taskId: string, options: ClaimOptions = {}): Promise<Task> {
    const { leaseSeconds, start } = parseInput(ClaimOptions, options);
    return unwrap(this.db.rpc('claim_task', {
      p_task_id: parseInput(TaskId, taskId),
      p_lease_seconds: leaseSeconds ?? undefined,
      p_start: start ?? false,
    }), Task);
  }

  /**
   * Claims up to `limit` tasks: addressed ones first, then broadcasts, by priority then age. A claimed
   * row this client cannot read is never left stranded: it is handed back (released, or failed if it was
   * started) with the reason, and the rest of the batch is returned.
   */
  async claimNext(options: ClaimNextOptions = {}): Promise<Task[]> {
    const { limit, capabilities, leaseSeconds, start } = parseInput(ClaimNextOptions, options);
    const rows = await unwrap(this.db.rpc('claim_next_tasks', {
      p_limit: limit ?? 1,
      p_capabilities: capabilities?.length ? capabilities : undefined,
      p_lease_seconds: leaseSeconds ?? undefined,
      p_start: start ?? false,
    }), ClaimedRows);
    const tasks: Task[] = [];
    for (const row of rows) {
      const task = Task.safeParse(row);
      if (task.success) {
        tasks.push(task.data);
        continue;
      }
      const reason = `agent ${this.agentId} could not read the task: ${task.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(row)'}: ${i.message}`).join('; ')}`;
      // If even that is refused, the claim lapses by the database's rule; the rest of the batch still runs.
      await (row.status === 'in_progress' ? this.fail(row.id, row.claim_token, reason) : this.release(row.id, row.claim_token, reason))
        .catch(() => undefined);
    }
    return tasks;
  }

  async start(taskId: string, claimToken: ClaimToken): Promise<Task> {
    return this.holderCall('start_task', taskId, claimToken, {});
  }

  /** Completes a task in progress with the protocol's result: {status, summary, artifacts, metrics}. */
  async complete(taskId: string, claimToken: ClaimToken, result: TaskResult = { status: 'success' }): Promise<Task> {
    return this.holderCall('complete_task', taskId, claimToken, { p_result: result });
  }

  /** Reports failure; with `retry` the task goes back to pending while attempts remain. */
  async fail(
    taskId: string, claimToken: ClaimToken, error: string,
    { retry = false, problems }: { retry?: boolean; problems?: Array<{ path: string; message: string }> } = {},
  ): Promise<Task> {
    return this.holderCall('fail_task', taskId, claimToken, { p_error: error, p_retry: retry, p_problems: problems ?? null });
  }

  /**
   * Attaches (or replaces) an artifact of a task this agent holds: content inline (up to 1 MiB), or a
   * link. Content that fails the json_schema the task expects for this name is refused by the database
   * (BT019), with each problem (OutputSchemaError). `task` is no longer needed (the database reads it);
   * it is still taken from callers that pass it.
   */
  async attachArtifact(
    taskId: string, name: string, content: ArtifactContent | LinkedArtifact,
    { mediaType }: { mediaType?: string; task?: Task } = {},
  ): Promise<Artifact> {
    const id = parseInput(TaskId, taskId);
    if (typeof content === 'object' && 'uri' in content && !(content instanceof Uint8Array)) {
      return unwrap(this.db.rpc('attach_artifact', {
        p_task_id: id, p_name: name, p_media_type: content.mediaType ?? mediaType ?? guessMediaType(name, ''),
        p_uri: content.uri, p_sha256: content.sha256 ?? undefined, p_size_bytes: content.sizeBytes ?? undefined,
      }).select(artifactColumns).single(), Artifact);
    }
    const bytes = toBytes(content);
    const type = mediaType ?? guessMediaType(name, content);
    return unwrap(this.db.rpc('attach_artifact', {
      p_task_id: id, p_name: name, p_media_type: type, p_content: toHex(bytes),
    }).select(artifactColumns).single(), Artifact);
  }

  /** A task's artifacts, without their content. */
  async artifacts(taskId: string): Promise<Artifact[]> {
    return unwrap(
      this.db.from('task_artifacts').select(artifactColumns).eq('task_id', parseInput(TaskId, taskId)).order('name'),
      Artifacts,
    );
  }

  /** One artifact with its content, checked against its SHA-256 (IntegrityError on a mismatch). */
  async artifact(taskId: string, name: string): Promise<ResolvedArtifact> {
    const row = await unwrapOne(
      this.db.from('task_artifacts').select(`${artifactColumns}, content`).eq('task_id', parseInput(TaskId, taskId)).eq('name', name).maybeSingle(),
      ArtifactWithContent,
      { message: `task ${taskId} has no artifact "${name}" that agent "${this.agentId}" can see`, hint: 'List them with: baton artifacts <task>.' },
    );
    return resolveArtifact(row);
  }

  /** What a task works from: its named inputs and its parent chain's artifacts, content hash-checked. */
  async inputs(taskId: string): Promise<ResolvedArtifact[]> {
    const rows = await unwrap(
      this.db.rpc('task_inputs', { p_task_id: parseInput(TaskId, taskId) }).select(`${artifactColumns}, content`),
      ArtifactsWithContent,
    );
    return rows.map(resolveArtifact);
  }

  /** The whole chain of a task, root first: producer, inputs, outputs, status and times. */
  async chain(taskId: string): Promise<LineageRow[]> {
    return unwrap(this.db.rpc('task_chain', { p_task_id: parseInput(TaskId, taskId) }), LineageRows);
  }

  /**
   * Adds what one run spent (tokens by model, turns, cost) to the task's current attempt: by the holder
   * of `claimToken`, or by the agent that held the task last once it is final (a cancelled run's spend).
   */
  async recordUsage(taskId: string, claimToken: ClaimToken, usage: RunUsage): Promise<TaskRun> {
    const u = parseInput(RunUsage, usage);
    return unwrap(this.db.rpc('record_usage', {
      p_task_id: parseInput(TaskId, taskId), p_claim_token: claimToken ?? noClaim, p_runtime: u.runtime, p_model: u.model,
      p_input_tokens: u.inputTokens, p_output_tokens: u.outputTokens, p_cached_tokens: u.cachedTokens, p_turns: u.turns,
      p_cost_usd: u.costUsd, p_session_id: u.sessionId,
    }), TaskRun);
  }

  /** What a task's attempts spent, one row per attempt and model, oldest first. */
  async runs(taskId: string): Promise<TaskRun[]> {
    return unwrap(this.db.from('task_runs').select('*').eq('task_id', parseInput(TaskId, taskId)).order('attempt').order('model'), TaskRuns);
  }

  /** What a task and everything under it spent (follow-ups, fan-out parts, joins), by model. */
  async chainUsage(taskId: string): Promise<ChainUsage[]> {
    return unwrap(this.db.rpc('chain_usage', { p_task_id: parseInput(TaskId, taskId) }), ChainUsages);
  }

  /**
   * Sets or raises the budget of a task this agent sent (tokens, USD, or both), for it and everything
   * under it; never more than is left above it. Raised so that some is left, the work it held goes on.
   */
  async setBudget(taskId: string, budget: BudgetInput): Promise<Budget> {
    const b = parseInput(BudgetInput, budget);
    return unwrap(this.db.rpc('set_budget', {
      p_task_id: parseInput(TaskId, taskId), p_tokens: b.tokens, p_usd: b.usd, p_on_spent: b.onSpent,
    }).single(), Budget);
  }

  /** The budgets over a task, nearest first, with what each has left; null when none covers it. */
  async budget(taskId: string): Promise<TaskBudget | null> {
    return unwrap(this.db.rpc('task_budget', { p_task_id: parseInput(TaskId, taskId) }), MaybeTaskBudget);
  }

  /**
   * What was spent, by UTC day, agent and model, over the runs this agent may see: of one agent, of one
   * chain (a task and everything under it), or all; since `since` (default: the last 7 days).
   */
  async spend(filter: { agent?: string; taskId?: string; since?: Date | string } = {}): Promise<SpendRow[]> {
    return unwrap(this.db.rpc('spend_report', {
      p_agent_id: filter.agent, p_task_id: filter.taskId === undefined ? undefined : parseInput(TaskId, filter.taskId),
      p_since: isoTime(filter.since),
    }), SpendRows);
  }

  /**
   * Hands back a task this agent cannot do, without counting an attempt: addressed to it, the task is
   * rejected with the reason; a broadcast goes back to pending and is never offered to this agent again.
   */
  async decline(taskId: string, claimToken: ClaimToken, reason: string): Promise<Task> {
    return this.holderCall('decline_task', taskId, claimToken, { p_reason: reason });
  }

  /**
   * Restarts the leases of tasks this agent holds (all of them when none are named) and says until when
   * each claim holds. Any call the agent makes keeps its claims alive too; this one says so explicitly.
   */
  async renew(taskIds?: string[]): Promise<ClaimCheck[]> {
    const held = taskIds?.length
      ? await Promise.all(taskIds.map((id) => this.getTask(id)))
      : await this.listTasks({ box: 'mine', status: ['claimed', 'in_progress', 'input_required'], limit: 1000 });
    // A named task this agent does not hold is reported as not current, with its status.
    const claims = held.filter((t) => taskIds?.length || t.claimed_by === this.agentId)
      .map((t) => ({ taskId: t.id, claimToken: t.claimed_by === this.agentId && t.claim_token ? t.claim_token : noClaim }));
    return this.checkClaims(claims, { renew: true });
  }

  /** Hands a held task back to pending without counting the attempt. */
  async release(taskId: string, claimToken: ClaimToken, reason?: string): Promise<Task> {
    return this.holderCall('release_task', taskId, claimToken, { p_reason: reason ?? null });
  }

  /** The holder reports progress; it lands on the task and reaches the sender as a progress message. */
  async progress(taskId: string, message: string, percent?: number): Promise<Task> {
    return this.taskCall('report_progress', taskId, { p_message: message, p_percent: percent ?? null });
  }

  /** The holder asks the sender a question; the task waits in input_required until answered. */
  async ask(taskId: string, question: string): Promise<Task> {
    return this.taskCall('ask_question', taskId, { p_question: question });
  }

  /** The sender answers the holder's question; the task resumes. */
  async answer(taskId: string, answer: string): Promise<Task> {
    return this.taskCall('answer_question', taskId, { p_answer: answer });
  }

  /** The sender gives a task that is not final to another agent. */
  async reassign(taskId: string, toAgent: string, reason?: string): Promise<Task> {
    return this.taskCall('reassign_task', taskId, { p_to_agent: toAgent, p_reason: reason ?? null });
  }

  async reject(taskId: string, reason: string): Promise<Task> {
    return this.taskCall('reject_task', taskId, { p_reason: reason });
  }

  async cancel(taskId: string, reason?: string): Promise<Task> {
    return this.taskCall('cancel_task', taskId, { p_reason: reason ?? null });
  }

  /**
   * The full id of the one visible task whose id starts with `prefix` (at least 6 hex digits, as git
   * abbreviates commits). Uses the primary key as a range, so it costs the same however many tasks exist.
   */
  async resolveTaskId(prefix: string): Promise<string> {
    const wanted = prefix.trim().toLowerCase();
    if (TaskId.safeParse(wanted).success) return wanted;
    const hex = wanted.replaceAll('-', '');
    if (!/^[0-9a-f]+$/.test(hex) || hex.length > 32) {
      throw new ValidationError({ code: 'INVALID_ID', message: `"${prefix}" is not a task id or an id prefix`, hint: 'Give the id, or at least its first 6 characters.' });
    }
    if (hex.length < 6) {
      throw new ValidationError({ code: 'INVALID_ID', message: `the task id prefix "${prefix}" is too short`, hint: 'Give at least 6 characters of the task id.' });
    }
    const asUuid = (h: string) => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    const matches = await unwrap(
      this.db.from('task_handoffs').select('id, title, status')
        .gte('id', asUuid(hex.padEnd(32, '0'))).lte('id', asUuid(hex.padEnd(32, 'f'))).order('id').limit(10),
      TaskSummaries,
    );
    if (matches.length === 0) {
      throw refusalOf('BT002', { message: `no task starting with ${prefix} that agent "${this.agentId}" can see`, hint: 'Check the id: baton tasks --all lists the tasks you can see.' });
    }
    if (matches.length > 1) {
      throw new AmbiguousIdError({
        code: 'AMBIGUOUS_ID',
        message: `the prefix ${prefix} matches ${matches.length === 10 ? 'at least 10' : matches.length} tasks: ${matches.map((m) => `${m.id.slice(0, 13)} (${m.status}) ${m.title}`).join('; ')}`,
        details: JSON.stringify(matches),
        hint: 'Give more characters of the id.',
      });
    }
    return matches[0]!.id;
  }

  /** Agents and whether they are online, optionally only those holding all of `capabilities`. */
  async discover({ capabilities = [], includeOffline = false }: { capabilities?: string[]; includeOffline?: boolean } = {}): Promise<AgentPresence[]> {
    let query = this.db.from('agent_presence').select('*');
    if (!includeOffline) query = query.eq('is_online', true);
    if (capabilities.length) query = query.contains('capabilities', capabilities);
    return unwrap(query.order('id'), AgentPresences);
  }

  /** One agent as discovery sees it (online or not), or null if there is none by that id. */
  async presence(agentId: string): Promise<AgentPresence | null> {
    const [agent] = await unwrap(this.db.from('agent_presence').select('*').eq('id', agentId).limit(1), AgentPresences);
    return agent ?? null;
  }

  async getTask(taskId: string): Promise<Task> {
    return unwrapOne(this.db.from('task_handoffs').select('*').eq('id', parseInput(TaskId, taskId)).maybeSingle(), Task, {
      message: `no task ${taskId} that agent "${this.agentId}" can see`,
      hint: 'Check the id: baton tasks --all lists the tasks you can see.',
    });
  }

  /** The tasks of `taskIds` that the agent can see, in no particular order; the others are left out. */
  async getTasks(taskIds: string[]): Promise<Task[]> {
    if (taskIds.length === 0) return [];
    return unwrap(this.db.from('task_handoffs').select('*').in('id', taskIds.map((id) => parseInput(TaskId, id))), Tasks);
  }

  /** Tasks the agent can see, highest priority first, then oldest. */
  async listTasks({ box = 'mine', status, limit = 50, offset = 0 }: TaskFilter = {}): Promise<Task[]> {
    // The inbox is an RPC: it reads the open tasks from the front of their indexes, where this OR of
    // two columns would be a bitmap scan that revisits every task finished since the last vacuum.
    if (box === 'mine') {
      if (offset) throw refusalOf('BT005', { message: 'the mine box is read from the front: it takes no offset', hint: 'Page with status, or list the sent or all box.' });
      return unwrap(this.db.rpc('my_tasks', { p_statuses: status?.length ? status : TaskStatus.options, p_limit: limit }), Tasks);
    }
    // What the agent may claim now is the claim's decision (capabilities, backoff, schedule, declines): asked of the database.
    if (box === 'pending') {
      if (offset || status?.length) throw refusalOf('BT005', { message: 'the pending box lists what a claim would take now: it takes no offset or status', hint: 'Give a limit, or list the all box with a status.' });
      return unwrap(this.db.rpc('claimable_tasks', { p_limit: limit }), Tasks);
    }
    const me = this.agentId;
    let query = this.db.from('task_handoffs').select('*');
    if (box === 'sent') query = query.eq('from_agent', me);
    if (status?.length) query = query.in('status', status);
    return unwrap(
      query.order('priority', { ascending: false }).order('created_at', { ascending: true }).order('id').range(offset, offset + limit - 1),
      Tasks,
    );
  }

  /**
   * For each claim: is it still this agent's current claim? With `renew`, extends the leases of those
   * that are. A daemon stops work whose claim is no longer current (cancelled, re-queued, taken over).
   */
  async checkClaims(claims: Array<{ taskId: string; claimToken: string }>, { renew = false } = {}): Promise<ClaimCheck[]> {
    if (claims.length === 0) return [];
    return unwrap(this.db.rpc('check_claims', {
      p_task_ids: claims.map((c) => c.taskId),
      p_claim_tokens: claims.map((c) => c.claimToken),
      p_renew: renew,
    }), ClaimChecks);
  }

  /** Re-queues dropped claims, dead-letters tasks out of attempts, cancels overdue ones. */
  async sweep(): Promise<SweepReport> {
    return unwrap(this.db.rpc('sweep_tasks'), SweepReport);
  }

  /** The tasks this task was handed off within, nearest first. */
  async ancestors(taskId: string): Promise<Task[]> {
    return unwrap(this.db.rpc('task_ancestors', { p_task_id: parseInput(TaskId, taskId) }), Tasks);
  }

  /** The task's history, oldest first. */
  async events(taskId: string): Promise<TaskEvent[]> {
    return unwrap(
      this.db.from('task_events').select('*').eq('task_id', parseInput(TaskId, taskId)).order('id'),
      TaskEvents,
    );
  }

  async send(input: MessageInput): Promise<Message> {
    const message = parseInput(MessageInput, input);
    return unwrap(this.db.from('agent_messages').insert({
      from_agent: this.agentId,
      to_agent: message.to ?? null,
      body: asJson(message.body) as NonNullable<Json>,
      kind: message.kind ?? 'note',
      task_id: message.taskId ?? null,
      reply_to_id: message.replyToId ?? null,
    }).select('*').single(), Message);
  }

  /** Messages to, from or for everyone, newest first. */
  async messages(
    { unread = false, taskId, kind, limit = 50 }: { unread?: boolean; taskId?: string; kind?: MessageKind; limit?: number } = {},
  ): Promise<Message[]> {
    let query = this.db.from('agent_messages').select('*');
    if (unread) query = query.eq('to_agent', this.agentId).is('read_at', null);
    if (taskId) query = query.eq('task_id', parseInput(TaskId, taskId));
    if (kind) query = query.eq('kind', kind);
    return unwrap(query.order('created_at', { ascending: false }).limit(limit), Messages);
  }

  async markRead(messageIds: string[]): Promise<Message[]> {
    return unwrap(
      this.db.from('agent_messages').update({ read_at: new Date().toISOString() })
        .in('id', messageIds).eq('to_agent', this.agentId).select('*'),
      Messages,
    );
  }

  /**
   * Says the agent is alive, optionally with a status line and how often it wakes (`everySeconds`):
   * its claims then survive two missed wake-ups. Every call that can write counts as a beat too.
   */
  async heartbeat(
    statusMessage?: string,
    { active = true, everySeconds, incarnation }: { active?: boolean; everySeconds?: number; incarnation?: string } = {},
  ): Promise<Agent> {
    return unwrap(this.db.rpc('send_heartbeat', {
      p_status_message: statusMessage ?? undefined,
      p_active: active,
      p_poll_interval: everySeconds === undefined ? undefined : seconds(everySeconds),
      // Names the process beating: one that a later process superseded is refused (SupersededError).
      p_incarnation: incarnation,
    }), Agent);
  }

  /**
   * A new process starts as this agent: every claim the agent held (left by an earlier process that
   * crashed or was killed) is handed back at once, by the database's rule for lost claims. A daemon calls
   * it on start; call it from a script only when no other process of the agent still works.
   */
  async beginIncarnation(): Promise<Incarnation> {
    return unwrap(this.db.rpc('begin_incarnation'), Incarnation);
  }

  async agent(agentId: string): Promise<Agent> {
    return unwrapOne(this.db.from('agents').select('*').eq('id', agentId).maybeSingle(), Agent, {
      message: `no agent named "${agentId}"`,
      hint: 'See who is registered: baton discover --all.',
    });
  }

  async agents(): Promise<Agent[]> {
    return unwrap(this.db.from('agents').select('*').order('id'), Agents);
  }

  async updateProfile(profile: AgentProfile): Promise<Agent> {
    const p = parseInput(AgentProfile, profile);
    const changes = Object.fromEntries(Object.entries({
      display_name: p.displayName,
      capabilities: p.capabilities,
      skills_offered: p.skillsOffered,
      comms_endpoint: p.commsEndpoint,
      max_concurrent: p.maxConcurrent,
      poll_interval: p.pollIntervalSeconds === undefined ? undefined : seconds(p.pollIntervalSeconds),
    }).filter(([, value]) => value !== undefined));
    if (Object.keys(changes).length === 0) return this.agent(this.agentId);
    return unwrapOne(this.db.from('agents').update(changes as Database['public']['Tables']['agents']['Update']).eq('id', this.agentId).select('*').maybeSingle(), Agent, {
      message: `agent "${this.agentId}" is not registered`,
      hint: 'Ask an operator to register it: baton agent create <id>.',
    });
  }

  private async holderCall(fn: TaskRpc, taskId: string, claimToken: ClaimToken, args: Record<string, unknown>): Promise<Task> {
    return this.taskCall(fn, taskId, {
      p_claim_token: parseInput(z.uuid({ error: 'a claim token must be a UUID' }).nullable(), claimToken),
      ...args,
    });
  }

  private async taskCall(fn: TaskRpc, taskId: string, args: Record<string, unknown>): Promise<Task> {
    // The name is one of a fixed list and the arguments differ per function: PostgREST and the
    // function's signature check them, and the answer is parsed.
    const call = this.db.rpc as (name: TaskRpc, args: Record<string, unknown>) => ReturnType<BatonDb['rpc']>;
    return unwrap(call.call(this.db, fn, { p_task_id: parseInput(TaskId, taskId), ...args }), Task);
  }
}

/** Stands for "no claim" where a claim token is required: it never matches a real one. */
/** A claim token no task holds: the database refuses it as not the current claim (BT007). */
export const noClaim = '00000000-0000-0000-0000-000000000000';

/**
 * The tasks a retry brought back with it: those that were cancelled because the retried task failed,
 * handed off again as retries of their own, waiting on the new attempt. They were made in the retry's
 * transaction, so they share its created_at (now() is the transaction's time).
 */
export async function broughtBackWith(db: BatonDb, again: Task): Promise<Task[]> {
  return unwrap(
    db.from('task_handoffs').select('*').eq('created_at', again.created_at).not('retry_of', 'is', null).neq('id', again.id).order('id'),
    Tasks,
  );
}

/** An interval literal Postgres reads, from seconds. */
function seconds(value: number): string {
  return `${value} seconds`;
}

function agentIdOf(token: string): string {
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch {
    throw refusalOf('BT006', {
            message: 'the agent token is not a JWT',
      hint: 'Set BATON_AGENT_TOKEN to the token printed by baton agent create.',
    });
  }
  if (typeof claims.agent_id !== 'string') {
    throw refusalOf('BT006', {
            message: 'the token carries no agent_id claim: it is not an agent token',
      hint: 'Use the token printed by baton agent create, not the anon or service-role key.',
    });
  }
  return claims.agent_id;
}
