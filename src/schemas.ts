/**
 * zod schemas: the single source of Baton's TypeScript types. Every row and RPC result that crosses into
 * TypeScript is parsed with one of these.
 */
import { z } from 'zod';
import { lazy } from './on-demand.js';
import { taskPriorities, taskStatuses } from './statuses.js';

export { finalStatuses, openStatuses } from './statuses.js';

/** Mirrors the SQL enum public.task_status. */
export const TaskStatus = lazy(() => z.enum(taskStatuses));
export type TaskStatus = z.infer<typeof TaskStatus>;

/** Mirrors the SQL enum public.task_priority, lowest first. */
export const TaskPriority = lazy(() => z.enum(taskPriorities));
export type TaskPriority = z.infer<typeof TaskPriority>;

/** Mirrors the SQL enum public.message_kind. */
export const MessageKind = lazy(() => z.enum(['note', 'progress', 'question', 'answer', 'result']));
export type MessageKind = z.infer<typeof MessageKind>;

/**
 * Any JSON value. Rows come from JSON.parse, so they are JSON already; this deliberately does not walk
 * them (z.json() recurses, and JSON nested thousands deep from another agent would blow the stack).
 * The database bounds depth and width (baton_settings.max_json_depth, max_json_keys).
 */
export const Json: z.ZodType<unknown> = lazy(() => z.unknown());
/** What a value is, in the words of JSON (an array, a string, null), for an error that names it. */
const jsonKind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`);
/** A JSON object; anything else is refused in the words the database uses for a payload. */
export const JsonObject = lazy(() => z.record(z.string(), Json, {
  error: (issue) => (issue.code === 'invalid_type' ? `must be a JSON object, not ${jsonKind(issue.input)}: wrap the value, e.g. {"input": ...}` : undefined),
}));
/** A JSON column that is never null (a message body, a skill list). */
export const JsonValue = lazy(() => z.custom<NonNullable<unknown>>((value) => value !== null && value !== undefined, 'a JSON value, not null'));
export type JsonObject = z.infer<typeof JsonObject>;

const timestamp = z.string();

/** The protocol's completion result; the database checks the same shape (baton_private.check_result). */
export const ResultStatus = lazy(() => z.enum(['success', 'partial', 'failed']));
export const ResultArtifact = lazy(() => z.looseObject({
  name: z.string(),
  path: z.string().optional(),
  url: z.string().optional(),
}));
export const TaskResult = lazy(() => z.looseObject({
  status: ResultStatus,
  summary: z.string().nullable().optional(),
  artifacts: z.array(ResultArtifact).optional(),
  metrics: JsonObject.nullable().optional(),
}));
export type TaskResult = z.infer<typeof TaskResult>;

export const ExpectedOutput = lazy(() => z.looseObject({
  name: z.string(),
  media_type: z.string().optional(),
  required: z.boolean().optional(),
  json_schema: JsonObject.optional(),
}));
export type ExpectedOutput = z.infer<typeof ExpectedOutput>;

export const ArtifactRef = lazy(() => z.object({ task_id: z.uuid(), name: z.string() }));
export type ArtifactRef = z.infer<typeof ArtifactRef>;

export const Agent = lazy(() => z.object({
  id: z.string(),
  display_name: z.string().nullable(),
  capabilities: z.array(z.string()),
  skills_offered: JsonValue,
  comms_endpoint: z.string().nullable(),
  is_active: z.boolean(),
  last_heartbeat: timestamp.nullable(),
  status_message: z.string().nullable(),
  max_concurrent: z.number().int(),
  /** How often the agent wakes, as Postgres prints an interval (e.g. "00:15:00"); null if never said. */
  poll_interval: z.string().nullable(),
  /** The process running as this agent now (a daemon's, since it began: begin_incarnation). */
  incarnation: z.uuid().nullable(),
  incarnation_started_at: timestamp.nullable(),
  /** Daily caps of spend (UTC day), set by an operator; null: none. Reached, the agent claims nothing until spend_capped_until. */
  daily_token_cap: z.number().nullable(),
  daily_usd_cap: z.union([z.number(), z.string()]).transform(Number).nullable(),
  spend_capped_until: timestamp.nullable(),
  /** When the current incarnation's process last named itself in a heartbeat; null until it does (one begun by hand never does). */
  incarnation_heard_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
}));
export type Agent = z.infer<typeof Agent>;

/** An agent as discovery sees it: online means running and heard from within the offline window. */
// The presence view shows who is there, not what an operator capped.
export const AgentPresence = lazy(() => Agent.omit({ daily_token_cap: true, daily_usd_cap: true, spend_capped_until: true, incarnation_heard_at: true }).extend({ is_online: z.boolean() }));
export type AgentPresence = z.infer<typeof AgentPresence>;

export const Task = lazy(() => z.object({
  id: z.uuid(),
  from_agent: z.string(),
  to_agent: z.string().nullable(),
  required_capabilities: z.array(z.string()),
  title: z.string(),
  description: z.string().nullable(),
  priority: TaskPriority,
  status: TaskStatus,
  status_reason: z.string().nullable(),
  payload: JsonObject,
  expected_outputs: z.array(ExpectedOutput),
  input_artifacts: z.array(ArtifactRef),
  result: TaskResult.nullable(),
  problems: z.array(z.object({ path: z.string(), message: z.string() })).nullable(),
  progress_message: z.string().nullable(),
  progress_percent: z.number().int().nullable(),
  progress_at: timestamp.nullable(),
  claimed_by: z.string().nullable(),
  claim_token: z.uuid().nullable(),
  /** The daemon process (its incarnation) that made the current claim; null for a claim made by hand (and from a database without the column). */
  claim_incarnation: z.uuid().nullable().default(null),
  claimed_at: timestamp.nullable(),
  started_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
  lease_expires_at: timestamp.nullable(),
  lease_seconds: z.number().int().nullable(),
  /** How long the current claim holds while its holder is unheard, as Postgres prints an interval. */
  claim_lease: z.string().nullable(),
  not_before: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  parent_task_id: z.uuid().nullable(),
  root_task_id: z.uuid().nullable(),
  depth: z.number().int(),
  deadline: timestamp.nullable(),
  idempotency_key: z.string().nullable(),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  /** Tasks this one waits for; it is not claimable while waiting_on > 0. */
  depends_on: z.array(z.uuid()),
  /** all or any (a text column the database checks). */
  dependency_mode: z.string(),
  /** cancel or run. */
  on_dependency_failure: z.string(),
  waiting_on: z.number().int(),
  /** Not claimable before this time. */
  run_at: timestamp.nullable(),
  /** The failed task this one retries. */
  retry_of: z.uuid().nullable(),
  /** The nearest budget over the task (task_budgets): its own, its parent's, or the retried task's; null: none. */
  budget_id: z.uuid().nullable(),
  recurring_id: z.uuid().nullable(),
  recurrence_slot: timestamp.nullable(),
  /** The W3C trace context it was handed off in (tracing only). */
  traceparent: z.string().nullable(),
  tracestate: z.string().nullable(),
}));
export type Task = z.infer<typeof Task>;

export const TaskEvent = lazy(() => z.object({
  id: z.number().int(),
  task_id: z.uuid(),
  actor: z.string(),
  from_status: TaskStatus.nullable(),
  to_status: TaskStatus,
  note: z.string().nullable(),
  at: timestamp,
}));
export type TaskEvent = z.infer<typeof TaskEvent>;

export const Message = lazy(() => z.object({
  id: z.uuid(),
  from_agent: z.string(),
  to_agent: z.string().nullable(),
  task_id: z.uuid().nullable(),
  reply_to_id: z.uuid().nullable(),
  kind: MessageKind,
  body: JsonValue,
  created_at: timestamp,
  read_at: timestamp.nullable(),
}));
export type Message = z.infer<typeof Message>;

// Inputs. Shapes and types only: the limits (title length, payload size, …) are the database's rules.

const taskId = z.uuid({ error: 'a task id must be a UUID' });
const agentId = z.string().min(1, 'an agent id cannot be empty');

export const HandoffInput = lazy(() => z.strictObject({
  to: agentId.nullable().optional(),
  title: z.string(),
  description: z.string().optional(),
  priority: TaskPriority.optional(),
  payload: JsonObject.optional(),
  requiredCapabilities: z.array(z.string()).optional(),
  deadline: z.union([z.date(), z.iso.datetime({ offset: true })]).optional(),
  maxAttempts: z.number().int().optional(),
  parentTaskId: taskId.optional(),
  idempotencyKey: z.string().optional(),
  /** Artifacts the holder must produce; completing without a required one is refused. */
  expectedOutputs: z.array(ExpectedOutput).optional(),
  /** Artifacts of earlier tasks this one works from. */
  inputArtifacts: z.array(ArtifactRef).optional(),
  /** How long a claim on the task holds unless renewed (default: baton_settings.default_lease). */
  leaseSeconds: z.number().int().optional(),
  /** Queue for an addressee that is offline (the database's default, true); false refuses it (BT011). */
  allowOffline: z.boolean().optional(),
  /** Tasks this one waits for: not claimable until they complete; their results and artifacts are its inputs. */
  dependsOn: z.array(taskId).max(100).optional(),
  /** all (default): wait for every dependency; any: the first to complete releases it. */
  dependencyMode: z.enum(['all', 'any']).optional(),
  /** What a dependency that fails does: cancel this task (default), or let it run anyway. */
  onDependencyFailure: z.enum(['cancel', 'run']).optional(),
  /** Not claimable before this time. */
  runAt: z.union([z.date(), z.iso.datetime({ offset: true })]).optional(),
  /** What this task and everything under it may spend; never more than is left above it. */
  budget: z.lazy(() => BudgetInput).optional(),
}));
export type HandoffInput = z.input<typeof HandoffInput>;

/**
 * A budget: tokens (every token a model read or wrote: input, cached input and output), money (USD), or
 * both; and what the work left does once it is spent: `ask` (held, and the sender asked to raise it) or
 * `fail` (failed, BT017).
 */
export const BudgetInput = lazy(() => z.strictObject({
  tokens: z.number().int().positive().optional(),
  usd: z.number().positive().optional(),
  onSpent: z.enum(['ask', 'fail']).optional(),
}));
export type BudgetInput = z.input<typeof BudgetInput>;

/** The join of a fan-out: how the sub-tasks' results come together. */
export const FanOutJoin = lazy(() => z.strictObject({
  /** first: the first success wins and the others are cancelled; all: every result; judge: an agent with `capability` picks. */
  mode: z.enum(['first', 'all', 'judge']),
  title: z.string().optional(),
  /** Who runs the join: by default this agent (first, all), or any agent with `capability` (judge). */
  to: agentId.optional(),
  /** For judge: the capability of the agents that may judge (default "judge"). */
  capability: z.string().optional(),
  payload: JsonObject.optional(),
  expectedOutputs: z.array(ExpectedOutput).optional(),
  /** What a failed sub-task does to an all or judge join: cancel it (default), or let it run with what there is. */
  onFailure: z.enum(['cancel', 'run']).optional(),
}));
export type FanOutJoin = z.input<typeof FanOutJoin>;

export const ClaimOptions = lazy(() => z.strictObject({
  leaseSeconds: z.number().int().optional(),
  start: z.boolean().optional(),
}));
export type ClaimOptions = z.input<typeof ClaimOptions>;

export const ClaimNextOptions = lazy(() => ClaimOptions.extend({
  limit: z.number().int().optional(),
  capabilities: z.array(z.string()).optional(),
}));
export type ClaimNextOptions = z.input<typeof ClaimNextOptions>;

/** An artifact's metadata; `content` (hex bytea) only where it was asked for. */
export const Artifact = lazy(() => z.object({
  id: z.uuid(),
  task_id: z.uuid(),
  name: z.string(),
  media_type: z.string(),
  size_bytes: z.number().int().nullable(),
  sha256: z.string().nullable(),
  uri: z.string().nullable(),
  producer: z.string(),
  created_at: timestamp,
}));
export type Artifact = z.infer<typeof Artifact>;

export const LineageRow = lazy(() => z.object({
  id: z.uuid(),
  root_task_id: z.uuid().nullable(),
  parent_task_id: z.uuid().nullable(),
  depth: z.number().int(),
  title: z.string(),
  status: TaskStatus,
  status_reason: z.string().nullable(),
  from_agent: z.string(),
  to_agent: z.string().nullable(),
  required_capabilities: z.array(z.string()),
  producer: z.string().nullable(),
  attempts: z.number().int(),
  progress_message: z.string().nullable(),
  progress_percent: z.number().int().nullable(),
  created_at: timestamp,
  started_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
  inputs: z.array(ArtifactRef),
  outputs: z.array(z.object({
    name: z.string(), media_type: z.string(), size_bytes: z.number().int().nullable(), sha256: z.string().nullable(),
    uri: z.string().nullable(), producer: z.string(),
  })),
  result_status: z.string().nullable(),
  summary: z.string().nullable(),
  depends_on: z.array(z.uuid()),
  dependency_mode: z.string(),
}));
export type LineageRow = z.infer<typeof LineageRow>;

export const ClaimCheck = lazy(() => z.object({
  task_id: z.uuid(),
  status: TaskStatus.nullable(),
  current: z.boolean(),
  lease_expires_at: timestamp.nullable(),
  /** How long from the check the claim holds, as the database reckons it; null where it does not lapse (a question waiting) or is not current. */
  hold_seconds: z.number().nullable(),
}));
export type ClaimCheck = z.infer<typeof ClaimCheck>;

/** One task's outcome in a batch: its new status, or why it was refused (code, message, hint). */
export const BatchOutcome = lazy(() => z.object({
  task_id: z.uuid().nullable(),
  status: TaskStatus.nullable(),
  code: z.string().nullable(),
  message: z.string().nullable(),
  hint: z.string().nullable(),
}));
export type BatchOutcome = z.infer<typeof BatchOutcome>;

/** One hand-off in a batch: the task made, or why it was refused. */
export const BatchHandoff = lazy(() => z.object({
  index: z.number().int(),
  task_id: z.uuid().nullable(),
  code: z.string().nullable(),
  message: z.string().nullable(),
  hint: z.string().nullable(),
}));
export type BatchHandoff = z.infer<typeof BatchHandoff>;

export const SweepReport = lazy(() => z.object({
  requeued_unstarted: z.number().int(),
  requeued_expired: z.number().int(),
  dead_lettered: z.number().int(),
  deadline_cancelled: z.number().int(),
  recurring_created: z.number().int(),
  retention_deleted: z.number().int(),
  /** pg_cron runs the sweep (job baton-sweep): daemons leave it to pg_cron. */
  scheduled: z.boolean(),
}));
export type SweepReport = z.infer<typeof SweepReport>;

/** What begin_incarnation did: the new process's id, and the claims of earlier processes it handed back. */
export const Incarnation = lazy(() => z.object({
  incarnation: z.uuid(),
  /** When the claims it handed back may be claimed again (after one of the agent's wake-ups); null when it handed back none. */
  claimable_at: timestamp.nullable().default(null),
  requeued_unstarted: z.number().int(),
  requeued_expired: z.number().int(),
  dead_lettered: z.number().int(),
}));
export type Incarnation = z.infer<typeof Incarnation>;

/** A recurring hand-off: the sweep hands off `template` as `from_agent` at every slot of `schedule`. */
export const RecurringHandoff = lazy(() => z.object({
  id: z.uuid(),
  name: z.string(),
  schedule: z.string(),
  from_agent: z.string(),
  to_agent: z.string().nullable(),
  required_capabilities: z.array(z.string()),
  template: JsonObject,
  enabled: z.boolean(),
  next_run_at: timestamp,
  last_run_at: timestamp.nullable(),
  last_task_id: z.uuid().nullable(),
  last_error: z.string().nullable(),
  created_at: timestamp,
}));
export type RecurringHandoff = z.infer<typeof RecurringHandoff>;

/** Open tasks of one status and required capability, as the task_queue view counts them. */
export const QueueRow = lazy(() => z.object({
  status: TaskStatus,
  capability: z.string().nullable(),
  tasks: z.number().int(),
  waiting: z.number().int(),
  scheduled: z.number().int(),
  oldest_created_at: timestamp.nullable(),
  oldest_age: z.string().nullable(),
}));
export type QueueRow = z.infer<typeof QueueRow>;

/** A failed task, as the dead_letters view shows it. */
export const DeadLetter = lazy(() => z.object({
  id: z.uuid(),
  title: z.string(),
  from_agent: z.string(),
  to_agent: z.string().nullable(),
  required_capabilities: z.array(z.string()),
  last_holder: z.string().nullable(),
  reason: z.string().nullable(),
  attempts: z.number().int(),
  failed_at: timestamp.nullable(),
  age: z.string().nullable(),
  retried_as: z.uuid().nullable(),
}));
export type DeadLetter = z.infer<typeof DeadLetter>;

export const MessageInput = lazy(() => z.strictObject({
  to: agentId.nullable().optional(),
  body: Json,
  kind: MessageKind.optional(),
  taskId: taskId.optional(),
  replyToId: z.uuid().optional(),
}));
export type MessageInput = z.input<typeof MessageInput>;

export const AgentProfile = lazy(() => z.strictObject({
  displayName: z.string().nullable().optional(),
  capabilities: z.array(z.string()).optional(),
  skillsOffered: Json.optional(),
  commsEndpoint: z.string().nullable().optional(),
  maxConcurrent: z.number().int().optional(),
  /** How often the agent wakes, in seconds; its claims survive two missed wake-ups. */
  pollIntervalSeconds: z.number().positive().optional(),
}));
export type AgentProfile = z.input<typeof AgentProfile>;

export { taskId as TaskId };

/** What one run of a runtime spent on one model: reported by the executor, added to the task's attempt. */
export const RunUsage = lazy(() => z.object({
  /** What ran it: claude, codex, gemini, openclaw, ... */
  runtime: z.string().min(1).max(64),
  model: z.string().min(1).max(200),
  /** Input tokens not read from a cache. */
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  /** Input tokens read from the provider's cache. */
  cachedTokens: z.number().int().nonnegative().default(0),
  turns: z.number().int().nonnegative().default(0),
  /** Where the runtime reports one (Claude Code does). */
  costUsd: z.number().nonnegative().optional(),
  sessionId: z.string().max(200).optional(),
}));
export type RunUsage = z.input<typeof RunUsage>;

const count = z.union([z.number(), z.string()]).transform(Number);
/** A task's recorded spend, one row per attempt and model (task_runs). */
export const TaskRun = lazy(() => z.object({
  task_id: z.uuid(),
  attempt: z.number().int(),
  model: z.string(),
  agent_id: z.string(),
  root_task_id: z.uuid(),
  runtime: z.string(),
  session_id: z.string().nullable(),
  input_tokens: count,
  output_tokens: count,
  cached_tokens: count,
  turns: z.number().int(),
  cost_usd: count.nullable(),
  reports: z.number().int(),
  started_at: timestamp,
  updated_at: timestamp,
}));
export type TaskRun = z.infer<typeof TaskRun>;

/** What a task and everything under it spent, by model (chain_usage). */
export const ChainUsage = lazy(() => z.object({
  model: z.string(),
  runtime: z.string(),
  tasks: z.number().int(),
  attempts: z.number().int(),
  input_tokens: count,
  output_tokens: count,
  cached_tokens: count,
  turns: count,
  cost_usd: count.nullable(),
}));
export type ChainUsage = z.infer<typeof ChainUsage>;

/** One budget (task_budgets), with what is left of it. */
export const Budget = lazy(() => z.object({
  task_id: z.uuid(),
  parent_budget: z.uuid().nullable(),
  set_by: z.string(),
  tokens_limit: count.nullable(),
  usd_limit: count.nullable(),
  on_spent: z.enum(['ask', 'fail']),
  tokens_spent: count,
  usd_spent: count,
  spent_at: timestamp.nullable(),
  tokens_left: count.nullable().optional(),
  usd_left: count.nullable().optional(),
}));
export type Budget = z.infer<typeof Budget>;

/** The budgets over a task, nearest first, and the least left of them (task_budget). */
export const TaskBudget = lazy(() => z.object({
  budgets: z.array(Budget),
  tokens_left: count.nullable(),
  usd_left: count.nullable(),
  spent: z.boolean(),
}));
export type TaskBudget = z.infer<typeof TaskBudget>;

/** What was spent on one UTC day by one agent on one model (spend_report). */
export const SpendRow = lazy(() => z.object({
  day: z.string(),
  agent_id: z.string(),
  model: z.string(),
  runs: z.number().int(),
  input_tokens: count,
  output_tokens: count,
  cached_tokens: count,
  cost_usd: count.nullable(),
}));
export type SpendRow = z.infer<typeof SpendRow>;
