/** `baton watch`: the board, live by push; or one JSON line per event, to follow a task from a script. */
import type { Command } from 'commander';
import type { PushedTask, PushListener } from '../../agent/push.js';
import type { BatonClient } from '../../client/agent.js';
import { rerunning } from '../../rerun.js';
import type { Task } from '../../schemas.js';
import { finalStatuses, openStatuses, type TaskStatus } from '../../statuses.js';
import { drawBoard, type BoardEvent, type BoardState } from '../board.js';
import { agentClient, configOf } from '../context.js';
import { ExitError, exitCodes, exitWhenDone } from '../exit.js';

const isFinal = (status: string) => finalStatuses.includes(status as TaskStatus);

/** Listens on the agent's topics; `onEvent` gets every task a message names. */
async function listen(client: BatonClient, onEvent: (event: BoardEvent) => void): Promise<PushListener> {
  const [{ agentTopics, PushListener }, { silentLogger }] = await Promise.all([import('../../agent/push.js'), import('../../logger.js')]);
  const me = await client.agent(client.agentId);
  const topics = agentTopics(me);
  const emitAll = (event: 'work' | 'task') => (tasks: PushedTask[]) => {
    for (const t of tasks) onEvent({ at: new Date().toISOString(), event, task_id: t.id, status: t.status });
  };
  const push = new PushListener(client.db, topics, { work: emitAll('work'), news: emitAll('task'), up: () => undefined }, silentLogger);
  push.start();
  return push;
}


/** Prints one JSON line per event; with `taskId`, only that task's, until it is final. */
async function stream(client: BatonClient, taskId: string | undefined): Promise<void> {
  const line = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  let last: Task | undefined;
  let finish: ((task: Task) => void) | undefined;
  const finished = new Promise<Task>((resolve) => { finish = resolve; });
  const look = async (event: BoardEvent['event']) => {
    const task = await client.getTask(taskId!);
    if (!last || task.status !== last.status || task.progress_at !== last.progress_at) {
      line({ at: new Date().toISOString(), event, task_id: task.id, status: task.status, ...(task.progress_message ? { progress: task.progress_message } : {}) });
    }
    last = task;
    if (isFinal(task.status)) finish!(task);
  };
  const push = await listen(client, (event) => {
    if (!taskId) return line(event);
    if (event.task_id === taskId) void look(event.event).catch(() => undefined);
  });
  const stop = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  // Push wakes it; a slow look now and then covers the time push is down.
  const poll = taskId ? setInterval(() => void look('poll').catch(() => undefined), push.up ? 15_000 : 2_000) : undefined;
  try {
    if (taskId) await look('poll');
    const ended = await Promise.race([finished, stop]);
    if (ended && ended.status !== 'completed') {
      throw new ExitError(`task ${ended.id} ended ${ended.status}${ended.status_reason ? `: ${ended.status_reason}` : ''}`, exitCodes.refused);
    }
  } finally {
    clearInterval(poll);
    await push.stop();
  }
}

/** Draws the board on the terminal until q or Ctrl-C; redraws on every push message and every few seconds. */
async function board(client: BatonClient): Promise<void> {
  const out = process.stdout;
  const state: BoardState = { me: client.agentId, tasks: [], agents: [], events: [], push: false };
  let push: PushListener | undefined;
  const redraw = () => {
    state.push = push?.up ?? false;
    out.write(`\x1b[H\x1b[2J${drawBoard(state, out.columns || 100, (out.rows || 40) - 1)}`);
  };
  const readBoard = async () => {
    // The open tasks, read from the front of their indexes however long the history is. What ended
    // while the board watched is what left that list, read again by id and kept for ten minutes.
    // (A listing of every status would come oldest first and, on a long-lived project, hold only
    // finished tasks, and read the whole table to find them.)
    const [open, agents] = await Promise.all([client.listTasks({ box: 'all', status: [...openStatuses], limit: 200 }), client.discover()]);
    const listed = new Set(open.map((t) => t.id));
    const left = state.tasks.filter((t) => !listed.has(t.id));
    const reread = await client.getTasks(left.filter((t) => !isFinal(t.status)).map((t) => t.id));
    const recent = Date.now() - 10 * 60_000;
    const ended = [...reread, ...left].filter((t) => isFinal(t.status) && Date.parse(t.updated_at) > recent)
      .sort((x, y) => Date.parse(y.updated_at) - Date.parse(x.updated_at));
    state.tasks = [...open, ...ended];
    state.agents = agents;
    redraw();
  };
  // A refresh asked for while one runs may come from a change that one read too early: it runs again.
  // One that fails leaves the board as it was; the next one tries again.
  const refresh = rerunning(() => readBoard().catch(() => undefined));
  let soon: NodeJS.Timeout | undefined;
  push = await listen(client, (event) => {
    state.events.push(event);
    if (state.events.length > 50) state.events.shift();
    soon ??= setTimeout(() => { soon = undefined; void refresh(); }, 100);
  });
  out.write('\x1b[?1049h\x1b[?25l');
  const timer = setInterval(() => void refresh(), 5_000);
  out.on('resize', redraw);
  const quit = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    if (process.stdin.isTTY) {
      process.stdin.setRawMode(true);
      process.stdin.resume();
      process.stdin.on('data', (key: Buffer) => { if (key.toString() === 'q' || key[0] === 3) resolve(); });
    }
  });
  try {
    await refresh();
    await quit;
  } finally {
    clearInterval(timer);
    clearTimeout(soon);
    out.off('resize', redraw);
    if (process.stdin.isTTY) process.stdin.setRawMode(false);
    process.stdin.pause();
    out.write('\x1b[?25h\x1b[?1049l');
    await push.stop();
  }
}

export function registerWatch(program: Command): void {
  program.command('watch')
    .description('a live board of the tasks you can see, moved by push; without a terminal, or with --json, one JSON line per event')
    .option('--task <task>', 'follow one task: one line per change, exit when it is final (0 completed, 1 failed, rejected or cancelled)')
    .addHelpText('after', `
On a terminal: columns by status, agents online with what they hold, the last events; q or Ctrl-C
quits, NO_COLOR turns colour off. In a pipe, or with --json: {"at", "event", "task_id", "status"} per line.

Example:
  $ baton watch
  $ baton watch --task 3f2a1b && echo done`)
    .action(async (opts: { task?: string }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const taskId = opts.task ? await client.resolveTaskId(opts.task) : undefined;
      try {
        if (taskId || config.json || !process.stdout.isTTY) await stream(client, taskId);
        else await board(client);
      } finally {
        exitWhenDone();
      }
    });
}
