/** How tasks, events and messages read at a terminal. */
import type { AgentPresence, Message, Task, TaskEvent } from '../schemas.js';
import { ago, fields, paint, table } from './output.js';

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

export function taskDetail({ task: t, events, messages }: { task: Task; events: TaskEvent[]; messages: Message[] }): string {
  const parts = [fields([
    ['id', t.id],
    ['title', t.title],
    ['status', `${status(t.status)}${t.status_reason ? ` (${t.status_reason})` : ''}`],
    ['priority', t.priority],
    ['from', t.from_agent],
    ['to', addressee(t)],
    ['holder', t.claimed_by],
    ['attempts', `${t.attempts} of ${t.max_attempts}`],
    ['progress', t.progress_message ? `${t.progress_percent ?? '?'}% ${t.progress_message}` : null],
    ['deadline', t.deadline],
    ['parent', t.parent_task_id],
    ['created', `${t.created_at} (${ago(t.created_at)})`],
    ['description', t.description],
    ['payload', JSON.stringify(t.payload)],
    ['result', t.result ? JSON.stringify(t.result) : null],
  ])];
  parts.push('', paint('bold', 'History'), table(events, [
    ['AT', (e) => e.at.replace('T', ' ').slice(0, 19)],
    ['CHANGE', (e) => `${e.from_status ?? '(new)'} → ${e.to_status}`],
    ['BY', (e) => e.actor],
    ['NOTE', (e) => e.note],
  ]));
  parts.push('', paint('bold', 'Thread'), messages.length ? messageTable(messages) : 'No messages.');
  return parts.join('\n');
}

export function presenceTable(agents: AgentPresence[]): string {
  return table(agents, [
    ['ID', (a) => a.id],
    ['NAME', (a) => a.display_name],
    ['ONLINE', (a) => (a.is_online ? paint('green', 'yes') : 'no')],
    ['CAPABILITIES', (a) => a.capabilities.join(',')],
    ['SKILLS', (a) => (Array.isArray(a.skills_offered) && a.skills_offered.length ? JSON.stringify(a.skills_offered) : null)],
    ['STATUS', (a) => a.status_message],
    ['HEARTBEAT', (a) => ago(a.last_heartbeat)],
  ], 'No agents online. Show offline ones too with --all.');
}
