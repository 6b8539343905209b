/**
 * The protocol's scripts (scripts/agentcomms/*.sh), with their positional arguments, meanings and
 * one-line outputs, for agents whose HEARTBEAT instructions call them. Each is a thin layer over the
 * same client calls as the full commands.
 */
import type { Command } from 'commander';
import type { BatonClient } from '../../client/agent.js';
import type { TaskResult } from '../../schemas.js';
import { openStatuses, taskPriorities, type TaskPriority } from '../../statuses.js';
import { agentClient, configOf, withBeat } from '../context.js';
import { usageError } from '../exit.js';
import { emit } from '../output.js';

function priorityOf(value: string | undefined): TaskPriority | undefined {
  if (value === undefined || value === '') return undefined;
  const priority = taskPriorities.find((p) => p === value.toLowerCase());
  if (!priority) throw usageError(`"${value}" is not a priority`, `Give one of ${taskPriorities.join(', ')} (default medium).`);
  return priority;
}

/**
 * The protocol's result argument: a JSON object is the structured result (its status defaults to
 * success), anything else is the summary of a success.
 */
export function protocolResult(text: string): TaskResult {
  if (!text.trimStart().startsWith('{')) return { status: 'success', summary: text };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw usageError(`the result looks like JSON but does not parse: ${(err as Error).message}`,
      'Pass a JSON object such as \'{"status": "success", "summary": "..."}\', or plain text for the summary.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw usageError('the result must be a JSON object or plain text', 'e.g. \'{"findings": "..."}\' or "Task completed successfully".');
  }
  return { status: 'success', ...value } as TaskResult;
}

/** discover.sh's filter: active (the default) or all; anything else is refused rather than guessed. */
const activeFilters: Record<string, boolean> = { active: false, online: false, true: false, all: true, any: true, false: true, inactive: true };

type Act = (client: BatonClient) => Promise<string>;

async function run(command: Command, act: Act): Promise<void> {
  const config = configOf(command);
  emit({ json: false }, await act(await agentClient(config)), (l) => l);
}

export function registerProtocol(program: Command): void {
  const protocol = program.command('protocol')
    .description('the protocol\'s scripts (scripts/agentcomms/*.sh): its arguments and one-line outputs')
    .addHelpText('after', `
Each subcommand takes the arguments of the script with its name, as the protocol's table lists them.

Example:
  $ baton protocol handoff cheenu "Research Supabase Realtime for live updates" high
  ✅ Task handed off: 3f2a1b4c-…`);
  // The scripts pass every argument after "--", so "status.sh --help" arrives as data: it asks for
  // the script's help, and nothing is done (no status of "--help" for others to read).
  protocol.hook('preSubcommand', (_protocol, script) => {
    const argv = process.argv;
    const after = argv.slice(argv.indexOf(script.name(), argv.indexOf('protocol')) + 1).filter((a) => a !== '--');
    if (['--help', '-h'].includes(after[0] ?? '')) script.help();
  });

  protocol.command('discover [active_filter] [capability]')
    .description('agents, as "<agent> - <capabilities> | <channel>": active ones (default), or all')
    .action((filter: string | undefined, capability: string | undefined, _opts, command: Command) => run(command, async (client) => {
      const includeOffline = filter === undefined ? false : activeFilters[filter.toLowerCase()];
      if (includeOffline === undefined) {
        throw usageError(`"${filter}" is not an active filter`, 'Give active (the default) or all, then optionally a capability: discover.sh active coding.');
      }
      const agents = await withBeat(client, client.discover({ includeOffline, capabilities: capability ? [capability] : [] }));
      const shown = filter?.toLowerCase() === 'inactive' ? agents.filter((a) => !a.is_online) : agents;
      if (shown.length === 0) return includeOffline ? 'No agents registered' : 'No agents online';
      return shown.map((a) => `${a.id} - ${a.capabilities.join(', ') || '(no capabilities)'} | ${a.comms_endpoint ?? 'baton'}`).join('\n');
    }));

  protocol.command('handoff <to_agent> <task> [priority]')
    .description('assign a task to one agent (queued even if it is offline)')
    .action((to: string, title: string, priority: string | undefined, _opts, command: Command) => run(command, async (client) => {
      const task = await client.handoff({ to, title, priority: priorityOf(priority) });
      return `✅ Task handed off: ${task.id}`;
    }));

  protocol.command('broadcast <task> [priority]')
    .description('post a task that any agent can claim')
    .action((title: string, priority: string | undefined, _opts, command: Command) => run(command, async (client) => {
      const task = await client.broadcast({ title, priority: priorityOf(priority) });
      return `✅ Task broadcast: ${task.id}`;
    }));
  registerProtocolWork(protocol);
}

/** The protocol's scripts for the holder: claim, reject, complete, fail, tasks, status. */
function registerProtocolWork(protocol: Command): void {
  protocol.command('claim [task_id]')
    .description('claim a pending task and start it (without an id: the next one for you)')
    .action((prefix: string | undefined, _opts, command: Command) => run(command, async (client) => {
      if (prefix) {
        const task = await client.claim(await client.resolveTaskId(prefix), { start: true });
        return `✅ Claimed: ${task.id} - ${task.title}`;
      }
      const [task] = await client.claimNext({ limit: 1, start: true });
      return task ? `✅ Claimed: ${task.id} - ${task.title}` : 'Nothing to claim';
    }));

  protocol.command('reject <task_id> <reason>')
    .description('decline a task addressed to you')
    .action((prefix: string, reason: string, _opts, command: Command) => run(command, async (client) => {
      const task = await client.reject(await client.resolveTaskId(prefix), reason);
      return `✅ Rejected: ${task.id}`;
    }));

  protocol.command('complete <task_id> <result>')
    .description('mark a task done: a JSON object is the structured result, plain text its summary')
    .action((prefix: string, text: string, _opts, command: Command) => run(command, async (client) => {
      const result = protocolResult(text);
      const id = await client.resolveTaskId(prefix);
      const task = await client.complete(id, (await client.getTask(id)).claim_token, result);
      return `✅ Completed: ${task.id}`;
    }));

  protocol.command('fail <task_id> <error>')
    .description('mark a task failed, with the error')
    .action((prefix: string, error: string, _opts, command: Command) => run(command, async (client) => {
      const id = await client.resolveTaskId(prefix);
      const task = await client.fail(id, (await client.getTask(id)).claim_token, error);
      return `✅ Failed: ${task.id}`;
    }));

  protocol.command('tasks')
    .description('tasks as "[status] <id> - <title>": --mine (default: open tasks for you), --pending or --all')
    .option('--mine', 'open tasks addressed to you or held by you')
    .option('--pending', 'tasks you could claim now')
    .option('--all', 'every task you can see')
    .action((opts: { mine?: boolean; pending?: boolean; all?: boolean }, command: Command) => run(command, async (client) => {
      const box = opts.all ? 'all' : opts.pending ? 'pending' : 'mine';
      const tasks = await withBeat(client, client.listTasks({ box, status: box === 'mine' ? [...openStatuses] : undefined }));
      return tasks.length ? tasks.map((t) => `[${t.status}] ${t.id} - ${t.title}`).join('\n') : 'No tasks';
    }));

  protocol.command('status <status_message>')
    .description('update your status line (a heartbeat)')
    .action((message: string, _opts, command: Command) => run(command, async (client) => {
      await client.heartbeat(message);
      return `✅ Status updated: ${message}`;
    }));
}
