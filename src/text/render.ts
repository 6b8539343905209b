/** How tasks, events and messages read at a terminal. */
import type { AgentPresence, Artifact, ChainUsage, LineageRow, Message, SpendRow, Task, TaskBudget, TaskEvent, TaskRun } from '../schemas.js';
import { ago, fields, paint, table } from './format.js';
import { budgetAmounts, progressText, rhythmOf, usd } from './words.js';

export { progressText, rhythmOf };

export const shortId = (id: string) => id.slice(0, 8);

const statusColor: Record<string, Parameters<typeof paint>[0]> = {
  pending: 'yellow', claimed: 'cyan', in_progress: 'blue', input_required: 'magenta',
  completed: 'green', failed: 'red', rejected: 'red', cancelled: 'gray',
};
const status = (s: string) => paint(statusColor[s] ?? 'white', s);
const addressee = (t: Task) => t.to_agent ?? (t.required_capabilities.length ? `any[${t.required_capabilities.join(',')}]` : 'anyone');

export function taskLine(verb: string, t: Task): string {
  return `${verb} ${shortId(t.id)} "${t.title}" (${t.priority}) — ${status(t.status)}, from ${t.from_agent} to ${addressee(t)}`;
}

export function taskTable(tasks: Task[]): string {
  return table(tasks, [
    ['ID', (t) => shortId(t.id)],
    ['STATUS', (t) => t.status],
    ['PRIORITY', (t) => t.priority],
    ['FROM', (t) => t.from_agent],
    ['TO', addressee],
    ['HOLDER', (t) => t.claimed_by],
    ['AGE', (t) => ago(t.created_at)],
    ['TITLE', (t) => t.title],
  ], 'No tasks.');
}

export function messageText(m: Message): string {
  const body = m.body as { text?: unknown } | null;
  return typeof body?.text === 'string' ? body.text : JSON.stringify(m.body);
}

export function messageTable(messages: Message[]): string {
  return table(messages, [
    ['ID', (m) => shortId(m.id)],
    ['AGE', (m) => ago(m.created_at)],
    ['FROM', (m) => m.from_agent],
    ['TO', (m) => m.to_agent ?? 'everyone'],
    ['KIND', (m) => m.kind],
    ['TASK', (m) => (m.task_id ? shortId(m.task_id) : null)],
    ['TEXT', messageText],
  ], 'No messages.');
}

export function taskDetail({ task: t, events, messages, usage, chain, budget }: { task: Task; events: TaskEvent[]; messages: Message[]; usage?: TaskRun[]; chain?: ChainUsage[]; budget?: TaskBudget }): string {
  const parts = [fields([
    ['id', t.id],
    ['title', t.title],
    ['status', `${status(t.status)}${t.status_reason ? ` (${t.status_reason})` : ''}`],
    ['priority', t.priority],
    ['from', t.from_agent],
    ['to', addressee(t)],
    ['holder', t.claimed_by],
    ['attempts', `${t.attempts} of ${t.max_attempts}`],
    ['progress', progressText(t)],
    ['deadline', t.deadline],
    ['parent', t.parent_task_id],
    ['created', `${t.created_at} (${ago(t.created_at)})`],
    ['description', t.description],
    ['payload', JSON.stringify(t.payload)],
    ['result', t.result ? JSON.stringify(t.result) : null],
    ['budget', budget ? budgetLine(budget) : null],
  ])];
  parts.push('', paint('bold', 'History'), table(events, [
    ['AT', (e) => e.at.replace('T', ' ').slice(0, 19)],
    ['CHANGE', (e) => `${e.from_status ?? '(new)'} → ${e.to_status}`],
    ['BY', (e) => e.actor],
    ['NOTE', (e) => e.note],
  ]));
  parts.push('', paint('bold', 'Thread'), messages.length ? messageTable(messages) : 'No messages.');
  if (usage?.length) {
    parts.push('', paint('bold', 'Spent'), table(usage, [
      ['ATTEMPT', (r) => String(r.attempt)],
      ['RUNTIME', (r) => r.runtime],
      ['MODEL', (r) => r.model],
      ['INPUT', (r) => String(r.input_tokens)],
      ['OUTPUT', (r) => String(r.output_tokens)],
      ['CACHED', (r) => String(r.cached_tokens)],
      ['TURNS', (r) => String(r.turns)],
      ['COST', (r) => dollars(r.cost_usd)],
      ['SESSION', (r) => r.session_id],
    ]));
  }
  if (chain) {
    parts.push('', paint('bold', 'Spent by the chain under this task'), table(chain, [
      ['MODEL', (c) => c.model],
      ['TASKS', (c) => String(c.tasks)],
      ['INPUT', (c) => String(c.input_tokens)],
      ['OUTPUT', (c) => String(c.output_tokens)],
      ['CACHED', (c) => String(c.cached_tokens)],
      ['COST', (c) => dollars(c.cost_usd)],
    ], 'Nothing recorded yet.'));
  }
  return parts.join('\n');
}

const dollars = (amount: number | null) => (amount === null ? null : usd(amount));

/** "spent 1100 of 1000 tokens (on task 3f2a…): spent" — the nearest budget, and whether any above is spent. */
function budgetLine(b: TaskBudget): string {
  const [own] = b.budgets;
  if (!own) return 'none';
  const amounts = budgetAmounts(own);
  const left = [b.tokens_left !== null ? `${b.tokens_left} tokens` : undefined, b.usd_left !== null ? usd(b.usd_left) : undefined].filter(Boolean).join(' and ');
  return `${amounts} spent (set on task ${own.task_id}, ${own.on_spent} when spent); ${b.spent ? paint('red', 'spent: the work left waits') : `left: ${left}`}`;
}

/** The budgets over a task, nearest first. */
export function budgetText(taskId: string, b: TaskBudget | null): string {
  if (!b) return `No budget covers task ${taskId}. Set one: baton budget ${taskId} --tokens 1M (or --usd 5).`;
  return [budgetLine(b), '', table(b.budgets, [
    ['ON TASK', (x) => x.task_id],
    ['TOKENS', (x) => (x.tokens_limit === null ? null : `${x.tokens_spent} of ${x.tokens_limit}`)],
    ['USD', (x) => (x.usd_limit === null ? null : `${usd(x.usd_spent)} of ${usd(x.usd_limit)}`)],
    ['WHEN SPENT', (x) => x.on_spent],
    ['SPENT AT', (x) => x.spent_at],
  ])].join('\n');
}

/** What was spent, by day, agent and model. */
export function spendTable(rows: SpendRow[]): string {
  return table(rows, [
    ['DAY', (r) => r.day],
    ['AGENT', (r) => r.agent_id],
    ['MODEL', (r) => r.model],
    ['RUNS', (r) => String(r.runs)],
    ['INPUT', (r) => String(r.input_tokens)],
    ['OUTPUT', (r) => String(r.output_tokens)],
    ['CACHED', (r) => String(r.cached_tokens)],
    ['COST', (r) => dollars(r.cost_usd)],
  ], 'Nothing spent in that time.');
}


export function presenceTable(agents: AgentPresence[]): string {
  return table(agents, [
    ['ID', (a) => a.id],
    ['NAME', (a) => a.display_name],
    ['ONLINE', (a) => (a.is_online ? paint('green', 'yes') : 'no')],
    ['CAPABILITIES', (a) => a.capabilities.join(',')],
    ['SKILLS', (a) => (Array.isArray(a.skills_offered) && a.skills_offered.length ? JSON.stringify(a.skills_offered) : null)],
    ['STATUS', (a) => a.status_message],
    ['HEARD', (a) => ago(a.last_heartbeat)],
    ['WAKES', (a) => rhythmOf(a)],
  ], 'No agents online. Show offline ones too with --all.');
}

export function bytes(n: number | null): string {
  if (n === null) return '?';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function duration(row: LineageRow): string {
  if (!row.started_at) return '';
  const end = row.completed_at ? Date.parse(row.completed_at) : Date.now();
  return ` ${((end - Date.parse(row.started_at)) / 1000).toFixed(1)}s`;
}

/** A chain as a tree, root first: producer, inputs, outputs, status and times. */
export function lineageTree(rows: LineageRow[]): string {
  const children = new Map<string | null, LineageRow[]>();
  for (const row of rows) {
    const parent = rows.some((r) => r.id === row.parent_task_id) ? row.parent_task_id : null;
    children.set(parent, [...(children.get(parent) ?? []), row]);
  }
  const lines: string[] = [];
  const walk = (row: LineageRow, lead: string, last: boolean, root: boolean) => {
    const branch = root ? '' : last ? '└─ ' : '├─ ';
    const outcome = row.result_status ? `${row.status} (${String(row.result_status)})` : row.status;
    lines.push(`${lead}${branch}${paint('bold', row.title)}  ${shortId(row.id)}  ${status(row.status).replace(row.status, outcome)}  by ${row.producer ?? row.to_agent ?? '-'}${duration(row)}`);
    const pad = lead + (root ? '' : last ? '   ' : '│  ');
    const kids = children.get(row.id) ?? [];
    const detail = pad + (kids.length ? '│  ' : '   ');
    if (row.depends_on?.length) {
      const named = row.depends_on.map((id) => { const dep = rows.find((r) => r.id === id); return dep ? `${dep.title} (${shortId(id)})` : shortId(id); });
      lines.push(`${detail}${paint('dim', 'after')} ${named.join(', ')}${row.dependency_mode === 'any' ? ', the first to complete' : ''}`);
    }
    for (const input of row.inputs) lines.push(`${detail}${paint('dim', 'in ')} ${input.name} ← ${shortId(input.task_id)}`);
    for (const output of row.outputs) {
      lines.push(`${detail}${paint('dim', 'out')} ${output.name} (${bytes(output.size_bytes)}, sha256 ${output.sha256?.slice(0, 12) ?? '?'}…)`);
    }
    // A summary of several lines keeps the tree: each of its lines is drawn under the arrow.
    if (row.summary) row.summary.split(/\r\n|\r|\n/).forEach((text, i) => lines.push(`${detail}${i ? ' ' : paint('dim', '→')}  ${text}`));
    kids.forEach((kid, i) => walk(kid, pad, i === kids.length - 1, false));
  };
  const roots = children.get(null) ?? [];
  roots.forEach((row, i) => walk(row, '', i === roots.length - 1, true));
  return lines.join('\n');
}

export function artifactTable(artifacts: Artifact[]): string {
  return table(artifacts, [
    ['NAME', (a) => a.name],
    ['TYPE', (a) => a.media_type],
    ['SIZE', (a) => bytes(a.size_bytes)],
    ['SHA256', (a) => a.sha256],
    ['BY', (a) => a.producer],
    ['WHERE', (a) => a.uri ?? 'inline'],
  ], 'No artifacts.');
}
