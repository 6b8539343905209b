/** Dead letters and schedules: retry, dead-letters, schedule add|list|remove. */
import { Option, type Command } from 'commander';
import type { DeadLetter, JsonObject, RecurringHandoff } from '../../schemas.js';
import { adminClient, agentClient, configOf } from '../context.js';
import { usageError } from '../exit.js';
import { integer, json, list, wholeNumber } from '../inputs.js';
import { emit } from '../output.js';
import { ago, table } from '../../text/format.js';
import { shortId, taskLine } from '../../text/render.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function deadLetterTable(rows: DeadLetter[]): string {
  return table(rows, [
    ['ID', (d) => shortId(d.id)],
    ['TITLE', (d) => d.title],
    ['FROM', (d) => d.from_agent],
    ['LAST HOLDER', (d) => d.last_holder],
    ['REASON', (d) => d.reason],
    ['FAILED', (d) => ago(d.failed_at)],
    ['RETRIED AS', (d) => (d.retried_as ? shortId(d.retried_as) : '-')],
  ], 'No failed tasks.');
}

/** How many dead letters there are for each value of `key`, most first. */
function countBy(rows: DeadLetter[], key: (d: DeadLetter) => string | null): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(key(row) ?? '-', (counts.get(key(row) ?? '-') ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${String(n).padStart(5)}  ${k}`).join('\n');
}

function scheduleTable(rows: RecurringHandoff[]): string {
  return table(rows, [
    ['NAME', (s) => s.name],
    ['SCHEDULE (UTC)', (s) => s.schedule],
    ['FROM', (s) => s.from_agent],
    ['TO', (s) => s.to_agent ?? `any[${s.required_capabilities.join(',')}]`],
    ['TITLE', (s) => String(s.template.title)],
    ['NEXT', (s) => (s.enabled ? s.next_run_at : 'disabled')],
    ['LAST', (s) => (s.last_error ? `error: ${s.last_error}` : s.last_task_id ? shortId(s.last_task_id) : '-')],
  ], 'No schedules.');
}

export function registerWorkflows(program: Command): void {
  registerDeadLetters(program);
  registerSchedules(program);
  registerQueue(program);
}

/** Queue depth, from the database: open tasks by status and required capability (the task_queue view). */
function registerQueue(program: Command): void {
  program.command('queue')
    .description('open tasks by status and required capability: how many, how many wait, how old the oldest (the operator sees all; an agent what it may)')
    .addHelpText('after', '\nExample:\n  $ baton queue --json')
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const rows = await (await import('../../client/admin.js')).readQueue(config.agentToken ? (await agentClient(config)).db : (await adminClient(config)).db);
      emit(config, rows, (r) => table(r, [
        ['STATUS', (q) => q.status],
        ['CAPABILITY', (q) => q.capability],
        ['TASKS', (q) => String(q.tasks)],
        ['WAITING', (q) => String(q.waiting)],
        ['SCHEDULED', (q) => String(q.scheduled)],
        ['OLDEST', (q) => ago(q.oldest_created_at)],
      ], 'No open tasks.'));
    });
}

/** Failed work: retry, dead-letters. */
function registerDeadLetters(program: Command): void {
  program.command('retry <task>')
    .description('a new attempt at a failed task you sent (or, with the secret key, any failed task), linked to the old one')
    .addHelpText('after', `
As an agent, the task is one you sent, named by id or prefix. As the operator (no BATON_AGENT_TOKEN,
SUPABASE_SECRET_KEY set), give the full id; the new task is still sent as the original sender.

Example:
  $ baton retry 3f2a1b      # a task from: baton tasks --failed`)
    .action(async (ref: string, _opts, command: Command) => {
      const config = configOf(command);
      let task, db;
      if (config.agentToken) {
        const client = await agentClient(config);
        task = await client.retry(await client.resolveTaskId(ref));
        db = client.db;
      } else {
        if (!uuid.test(ref)) throw usageError(`as the operator, name the task by its full id, not "${ref}"`, 'baton dead-letters --json lists them with their ids.');
        const admin = await adminClient(config);
        task = await admin.retry(ref);
        db = admin.db;
      }
      const back = await (await import('../../client/agent.js')).broughtBackWith(db, task);
      emit(config, { ...task, brought_back: back }, () => [
        `${taskLine('Retried as', task)} (retry of ${shortId(ref)})`,
        ...(back.length ? [`Brought back ${back.length} task(s) cancelled because it failed; they wait on it again:`] : []),
        ...back.map((t) => `  ${taskLine('', t).trim()} (retry of ${shortId(t.retry_of!)})`),
      ].join('\n'));
    });

  program.command('dead-letters')
    .description('failed tasks, newest first: why, who held them last, how long ago, whether retried (secret key)')
    .option('-n, --limit <n>', 'at most this many', wholeNumber(1, 10_000), 100)
    .addOption(new Option('--by <what>', 'count them by reason, sender or holder instead of listing them').choices(['reason', 'sender', 'holder']))
    .addHelpText('after', `
Example:
  $ baton dead-letters
  $ baton dead-letters --by reason`)
    .action(async (opts: { limit: number; by?: 'reason' | 'sender' | 'holder' }, command: Command) => {
      const config = configOf(command);
      const rows = await (await adminClient(config)).deadLetters({ limit: opts.limit });
      const key = { reason: (d: DeadLetter) => d.reason, sender: (d: DeadLetter) => d.from_agent, holder: (d: DeadLetter) => d.last_holder };
      emit(config, rows, (r) => (opts.by ? countBy(r, key[opts.by]) || 'No failed tasks.' : deadLetterTable(r)));
    });
}

/** Recurring hand-offs: schedule add, list, remove. */
function registerSchedules(program: Command): void {
  const schedule = program.command('schedule').description('recurring hand-offs that the sweep makes on a cron schedule (secret key)');

  schedule.command('add <name>')
    .description('hand off a task on a schedule, as an agent: to one agent, or to any with the capabilities')
    .requiredOption('--cron <expr>', 'when, in five-field cron syntax, UTC: minute hour day month weekday')
    .requiredOption('--from <agent>', 'the agent each task is sent as (it hears of the results)')
    .requiredOption('-t, --title <title>', 'the task\'s title')
    .option('--to <agent>', 'the agent each task is addressed to')
    .option('-c, --capability <list>', 'or: the capabilities its taker must hold', list)
    .option('-d, --description <text>', 'what the work is')
    .option('--payload <json>', 'the work as a JSON object, inline, @file or - for stdin', json)
    .addOption(new Option('-p, --priority <priority>', 'claim order').choices(['low', 'medium', 'high', 'urgent']))
    .option('--max-attempts <n>', 'attempts before a task fails for good', integer)
    .option('--disabled', 'define it without running it yet')
    .addHelpText('after', `
Example:
  $ baton schedule add nightly-report --cron "0 6 * * *" --from lead --to researcher --title "Summarise yesterday"`)
    .action(async (name: string, opts: { cron: string; from: string; title: string; to?: string; capability?: string[]; description?: string; payload?: JsonObject; priority?: 'low' | 'medium' | 'high' | 'urgent'; maxAttempts?: number; disabled?: boolean }, command: Command) => {
      const config = configOf(command);
      if (!opts.to && !opts.capability?.length) throw usageError('say whom the tasks go to', 'Add --to <agent>, or --capability <list> to offer them to any capable agent.');
      const made = await (await adminClient(config)).createSchedule({
        name, schedule: opts.cron, from: opts.from, to: opts.to, capabilities: opts.capability, enabled: !opts.disabled,
        template: { title: opts.title, description: opts.description, payload: opts.payload, priority: opts.priority, maxAttempts: opts.maxAttempts },
      });
      emit(config, made, (s) => `Schedule ${s.name} added: "${String(s.template.title)}" ${s.enabled ? `next at ${s.next_run_at}` : '(disabled)'}.`);
    });

  schedule.command('list')
    .description('every recurring hand-off, with its next slot and its last task or error')
    .addHelpText('after', '\nExample:\n  $ baton schedule list --json')
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      emit(config, await (await adminClient(config)).listSchedules(), scheduleTable);
    });

  for (const [verb, enabled] of [['pause', false], ['resume', true]] as const) {
    schedule.command(`${verb} <name>`)
      .description(enabled ? 'run a paused recurring hand-off again (a slot missed while paused fires once)' : 'stop making tasks for a recurring hand-off until it is resumed')
      .addHelpText('after', `\nExample:\n  $ baton schedule ${verb} nightly-report`)
      .action(async (name: string, _opts, command: Command) => {
        const config = configOf(command);
        const changed = await (await adminClient(config)).setScheduleEnabled(name, enabled);
        if (!changed) throw usageError(`no schedule named "${name}"`, 'baton schedule list shows them.');
        emit(config, changed, (s) => `Schedule ${s.name} ${enabled ? `resumed: next at ${s.next_run_at}` : 'paused'}.`);
      });
  }

  schedule.command('remove <name>')
    .description('stop a recurring hand-off; the tasks it made stay')
    .addHelpText('after', '\nExample:\n  $ baton schedule remove nightly-report')
    .action(async (name: string, _opts, command: Command) => {
      const config = configOf(command);
      const removed = await (await adminClient(config)).removeSchedule(name);
      if (!removed) throw usageError(`no schedule named "${name}"`, 'baton schedule list shows them.');
      emit(config, { name, removed }, () => `Schedule ${name} removed; the tasks it made stay.`);
    });
}
