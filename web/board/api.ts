/** The board's API, as the page calls it: reads are GET, actions one POST with the session's CSRF token. */
import { taskStatuses, type TaskStatus } from '../../src/statuses';

export interface Session { kind: 'operator' | 'agent'; id: string | null; csrf: string; push: boolean }

/** A refusal, as the server (or the database behind it) said it. */
export class Refusal extends Error {
  constructor(readonly code: string, message: string, readonly hint: string | null) {
    super(message);
  }
}

async function answer<T>(res: Response): Promise<T> {
  const body = await res.json().catch(() => ({ code: `HTTP${res.status}`, message: res.statusText, hint: null }));
  if (!res.ok) throw new Refusal(body.code ?? `HTTP${res.status}`, body.message ?? res.statusText, body.hint ?? null);
  return body as T;
}

export const get = <T>(path: string): Promise<T> => fetch(`/api/${path}`, { headers: { accept: 'application/json' } }).then((r) => answer<T>(r));

let csrf = '';
export function setCsrf(token: string): void {
  csrf = token;
}

export type Action =
  | { action: 'retry'; task: string }
  | { action: 'cancel'; task: string; reason?: string }
  | { action: 'reassign'; task: string; to: string; reason?: string }
  | { action: 'answer'; task: string; text: string }
  | { action: 'pause' | 'resume' | 'remove'; schedule: string };

export const act = <T = unknown>(action: Action): Promise<T> => fetch('/api/actions', {
  method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify(action),
}).then((r) => answer<T>(r));

// What the API returns, as far as the page reads it.
export type Status = TaskStatus;
export const statuses: Status[] = [...taskStatuses];

export interface Overview {
  /** Open tasks all told; finished ones since `finishedSince` (a day ago). */
  byStatus: Record<Status, number>;
  finishedSince: string | null;
  lastHour: Array<{ minute: string; completed: number; failed: number; withdrawn: number }>;
  agents: { total: number; online: number };
}
export interface AgentRow {
  id: string; display_name: string | null; capabilities: string[]; is_online: boolean; is_active: boolean;
  last_heartbeat: string | null; poll_interval: string | null; status_message: string | null; max_concurrent: number;
  holds: Array<{ id: string; title: string; status: Status }>;
}
export interface TaskRow {
  id: string; title: string; status: Status; priority: string; from_agent: string; to_agent: string | null; claimed_by: string | null;
  required_capabilities: string[]; progress_percent: number | null; waiting_on: number; created_at: string; updated_at: string; completed_at: string | null;
}
export interface TaskPage { rows: TaskRow[]; total: number; exact: boolean; page: number; size: number }
export interface ChainNode {
  id: string; parent_task_id: string | null; title: string; status: Status; producer: string | null; to_agent: string | null;
  from_agent: string; depends_on: string[]; dependency_mode: string; depth: number;
}
export interface TaskDetail {
  task: TaskRow & {
    description: string | null; payload: unknown; result: unknown; status_reason: string | null; progress_message: string | null;
    attempts: number; max_attempts: number; depends_on: string[]; retry_of: string | null; parent_task_id: string | null;
    root_task_id: string | null; expected_outputs: unknown; deadline: string | null; claimed_at: string | null; started_at: string | null;
  };
  events: Array<{ id: number; actor: string; from_status: Status | null; to_status: Status; note: string | null; at: string }>;
  messages: Array<{ id: string; from_agent: string; to_agent: string | null; kind: string; body: unknown; created_at: string }>;
  artifacts: Array<{ name: string; media_type: string; size_bytes: number | null; sha256: string | null; uri: string | null; producer: string; created_at: string }>;
  chain: ChainNode[];
  retries: Array<{ id: string; status: Status; created_at: string }>;
  /** What this task's runs spent, by attempt and model. */
  usage: Array<{ attempt: number; model: string; runtime: string; input_tokens: number; output_tokens: number; cached_tokens: number; turns: number; cost_usd: number | null; session_id: string | null }>;
  /** What the task and everything under it spent, by model (empty when that is only the task's own). */
  chainUsage: Array<{ model: string; tasks: number; input_tokens: number; output_tokens: number; cached_tokens: number; cost_usd: number | null }>;
  /** The budgets over the task's chain, nearest first, and the least left (null: no budget). */
  budget: BudgetView | null;
}
export interface BudgetView {
  budgets: Array<{ task_id: string; tokens_limit: number | null; usd_limit: number | null; tokens_spent: number; usd_spent: number; on_spent: 'ask' | 'fail'; spent_at: string | null }>;
  tokens_left: number | null;
  usd_left: number | null;
  spent: boolean;
}
export interface SpendRowView {
  day: string; agent_id: string; model: string; runs: number; input_tokens: number; output_tokens: number; cached_tokens: number; cost_usd: number | null;
}
export interface DeadLetterRow {
  id: string; title: string; from_agent: string; to_agent: string | null; last_holder: string | null; reason: string | null;
  attempts: number; failed_at: string | null; retried_as: string | null;
}
export interface ScheduleRow {
  id: string; name: string; schedule: string; from_agent: string; to_agent: string | null; required_capabilities: string[];
  enabled: boolean; next_run_at: string; last_run_at: string | null; last_error: string | null; template: { title?: string };
}
