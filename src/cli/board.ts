/** The live board `baton watch` draws: tasks by status, agents online with what they hold, last events. */
import type { AgentPresence, Task } from '../schemas.js';
import { finalStatuses } from '../statuses.js';
import { ago, paint, safeText } from '../text/format.js';
import { shortId } from '../text/render.js';

export interface BoardEvent {
  at: string;
  event: 'work' | 'task' | 'poll';
  task_id: string;
  status: string;
}

export interface BoardState {
  me: string;
  tasks: Task[];
  agents: AgentPresence[];
  events: BoardEvent[];
  push: boolean;
}

const columns: Array<[title: string, statuses: string[]]> = [
  ['pending', ['pending']],
  ['claimed', ['claimed']],
  ['in progress', ['in_progress']],
  ['waiting for input', ['input_required']],
  ['done recently', [...finalStatuses]],
];

const fit = (text: string, width: number) => (text.length > width ? `${text.slice(0, Math.max(0, width - 1))}…` : text.padEnd(width));

/** The board as lines no wider than `width`, at most `height` of them. */
export function drawBoard(state: BoardState, width: number, height: number, now = Date.now()): string {
  const lines: string[] = [];
  const title = `Baton — ${state.me} — ${state.push ? 'live (push)' : 'polling (push is down)'} — q to quit`;
  lines.push(paint('bold', fit(title, width)));
  lines.push('');
  const colWidth = Math.max(14, Math.floor((width - (columns.length - 1)) / columns.length));
  const cells = columns.map(([name, statuses]) => {
    const tasks = state.tasks.filter((t) => statuses.includes(t.status));
    return [paint('bold', fit(`${name} (${tasks.length})`, colWidth)),
      ...tasks.slice(0, 12).map((t) => fit(`${shortId(t.id)} ${safeText(t.title)}`, colWidth))];
  });
  const rows = Math.max(...cells.map((c) => c.length));
  for (let r = 0; r < rows; r += 1) lines.push(cells.map((c) => c[r] ?? ' '.repeat(colWidth)).join(' ').trimEnd());
  lines.push('');
  lines.push(paint('bold', 'agents online'));
  const online = state.agents.filter((a) => a.is_online);
  if (online.length === 0) lines.push('  (none)');
  for (const a of online.slice(0, 10)) {
    const holds = state.tasks.filter((t) => t.claimed_by === a.id && ['claimed', 'in_progress', 'input_required'].includes(t.status));
    lines.push(fit(`  ${a.id}  heard ${ago(a.last_heartbeat, now)}  holds ${holds.length ? holds.map((t) => shortId(t.id)).join(' ') : '-'}`, width));
  }
  lines.push('');
  lines.push(paint('bold', 'last events'));
  for (const e of state.events.slice(-8).reverse()) {
    lines.push(fit(`  ${e.at.slice(11, 19)}  ${shortId(e.task_id)}  ${e.event === 'work' ? 'claimable' : e.status}`, width));
  }
  return lines.slice(0, height).join('\n');
}
