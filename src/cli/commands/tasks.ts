/** Sending work and looking at it: handoff, broadcast, tasks, show. */
import fs from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { handoffInput, ONLINE_ONLY_HINT, queuedNote, type HandoffWords } from '../../client/handoff-words.js';
import type { BatchHandoff, ExpectedOutput, HandoffInput, JsonObject } from '../../schemas.js';
import { openStatuses, taskStatuses, type TaskStatus } from '../../statuses.js';
import { agentClient, configOf, withBeat } from '../context.js';
import { collectExpected, collectInput, deadline, dollars, integer, json, list, tokens, wholeNumber } from '../inputs.js';
import { ExitError, exitCodes, usageError } from '../exit.js';
import { emit } from '../output.js';
import { budgetText, spendTable, taskDetail, taskLine, taskTable } from '../../text/render.js';

interface TaskOptions {
  description?: string;
  priority?: HandoffInput['priority'];
  payload?: JsonObject;
  capability?: string[];
  deadline?: string;
  maxAttempts?: number;
  parent?: string;
  idempotencyKey?: string;
  allowOffline?: boolean;
  onlineOnly?: boolean;
  expect?: ExpectedOutput[];
  expectOptional?: ExpectedOutput[];
  outputSchema?: Array<{ name: string; schema: JsonObject }>;
  input?: Array<{ task: string; name: string }>;
  lease?: number;
  after?: string[];
  afterAny?: boolean;
  runAnyway?: boolean;
  at?: string;
  budgetTokens?: number;
  budgetUsd?: number;
  onBudgetSpent?: 'ask' | 'fail';
}

function withTaskOptions(command: Command): Command {
  return command
    .option('-d, --description <text>', 'what the work is, in detail')
    .addOption(new Option('-p, --priority <priority>', 'claim order').choices(['low', 'medium', 'high', 'urgent']).default('medium'))
    .option('--payload <json>', 'the work as a JSON object, inline, @file or - for stdin', json)
    .option('-c, --capability <list>', 'required capabilities, comma-separated (repeatable)', list)
    .option('--deadline <when>', 'cancel it if still pending then: +30m, +2h, +7d or ISO', deadline)
    .option('--max-attempts <n>', 'attempts before it fails for good', integer)
    .option('--parent <task>', 'the task this work is part of (id or prefix)')
    .option('--idempotency-key <key>', 'handing off again with the same key returns the first task')
    .option('--expect <name[=type]>', 'a required output artifact (repeatable)', collectExpected(true))
    .option('--expect-optional <name[=type]>', 'an optional output artifact (repeatable)', collectExpected(false))
    .option('--output-schema <name=@schema.json>', 'a JSON Schema the named output must satisfy (repeatable)', collectSchema)
    .option('--input <task:name>', 'an artifact of an earlier task to work from (repeatable)', collectInput)
    .option('--lease <seconds>', 'how long a claim on it holds unless renewed', integer)
    .option('--after <task...>', 'wait until these tasks complete (ids or prefixes); their results and artifacts become its inputs')
    .option('--after-any', 'with --after: the first of them to complete releases it, and the others are cancelled')
    .option('--run-anyway', 'with --after: run even if one of them fails or is cancelled (default: cancel this one too)')
    .option('--at <when>', 'not claimable before then: +10m, +2h, +1d or ISO', deadline)
    .option('--budget-tokens <n>', 'what it and everything under it may spend in tokens (input, cached and output): 250000, 250k, 1.5M', tokens)
    .option('--budget-usd <amount>', 'what it and everything under it may spend in US dollars', dollars)
    .addOption(new Option('--on-budget-spent <what>', 'once the budget is spent, the work left waits and you are asked to raise it (ask), or it fails (fail)').choices(['ask', 'fail']));
}

function collectSchema(value: string, previous: Array<{ name: string; schema: JsonObject }> = []) {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('expected name=@schema.json.');
  return [...previous, { name: value.slice(0, eq), schema: json(value.slice(eq + 1)) as JsonObject }];
}

async function send(command: Command, to: string | null, title: string, opts: TaskOptions): Promise<void> {
  const config = configOf(command);
  const client = await agentClient(config);
  const expected = [...(opts.expect ?? []), ...(opts.expectOptional ?? [])];
  for (const { name, schema } of opts.outputSchema ?? []) {
    const output = expected.find((o) => o.name === name);
    if (!output) throw usageError(`--output-schema names "${name}", which no --expect declares`, `Add --expect ${name}.`);
    output.json_schema = schema;
  }
  const inputs = await Promise.all((opts.input ?? []).map(async ({ task, name }) => ({ task_id: await client.resolveTaskId(task), name })));
  const words: HandoffWords = {
    title,
    description: opts.description,
    priority: opts.priority,
    payload: opts.payload as JsonObject | undefined,
    deadline: opts.deadline,
    maxAttempts: opts.maxAttempts,
    parent: opts.parent ? await client.resolveTaskId(opts.parent) : undefined,
    idempotencyKey: opts.idempotencyKey,
    expected,
    inputs,
    leaseSeconds: opts.lease,
    after: opts.after ? await Promise.all(opts.after.map((ref) => client.resolveTaskId(ref))) : undefined,
    afterAny: opts.afterAny,
    runAnyway: opts.runAnyway,
    runAt: opts.at,
    budget: opts.budgetTokens || opts.budgetUsd || opts.onBudgetSpent ? { tokens: opts.budgetTokens, usd: opts.budgetUsd, onSpent: opts.onBudgetSpent } : undefined,
  };
  const task = await client.handoff({
    // Queued for an agent that is offline unless refused by asking: the database's default (handoff-words.ts).
    ...handoffInput(words), to, requiredCapabilities: opts.capability, allowOffline: opts.onlineOnly ? false : undefined,
  });
  const waits = task.waiting_on > 0 ? `, waiting for ${task.waiting_on} task(s)` : task.run_at ? `, not before ${task.run_at}` : '';
  const away = config.json ? undefined : await queuedNote(client, task);
  emit(config, task, (t) => `${taskLine(to === null ? 'Broadcast' : 'Handed off', t)}${waits}${away ? ` (${away}; ${ONLINE_ONLY_HINT})` : ''}`);
}

/** Hands off every line of a JSON Lines file, 1000 to a request; refused lines are listed, exit 1. */
async function sendMany(command: Command, file: string): Promise<void> {
  const config = configOf(command);
  const client = await agentClient(config);
  const text = (() => {
    try {
      return fs.readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (err) {
      throw usageError(`cannot read ${file}: ${(err as Error).message}`, 'Give a JSON Lines file: one task per line.');
    }
  })();
  const lines = text.split('\n').map((line, i) => ({ line: i + 1, text: line.trim() })).filter((l) => l.text);
  const inputs = lines.map(({ line, text: raw }) => {
    try {
      return JSON.parse(raw) as HandoffInput;
    } catch (err) {
      throw usageError(`line ${line} of ${file} is not JSON: ${(err as Error).message}`, 'Nothing was handed off; fix the line and run it again.');
    }
  });
  const results: Array<BatchHandoff & { line: number }> = [];
  for (let start = 0; start < inputs.length; start += 1000) {
    const answers = await client.handoffMany(inputs.slice(start, start + 1000));
    results.push(...answers.map((a) => ({ ...a, line: lines[start + a.index]!.line })));
  }
  const refused = results.filter((r) => !r.task_id);
  emit(config, results, (rows) => [
    `Handed off ${rows.length - refused.length} of ${rows.length} task(s).`,
    ...refused.map((r) => `line ${r.line}: ${r.message}${r.hint ? ` — ${r.hint}` : ''}`),
  ].join('\n'));
  if (refused.length) throw new ExitError(`${refused.length} line(s) of ${file} were refused`, exitCodes.refused, 'The others were handed off; fix those lines and send them again.');
}

export function registerTasks(program: Command): void {
  withTaskOptions(program.command('handoff [to_agent] [title]'))
    .description('hand a task to one agent, or many tasks from a JSON Lines file')
    .option('--online-only', 'refuse it (BT011) if the agent is offline, instead of queueing it for when it comes back')
    .option('--allow-offline', 'queue it even if the agent is offline: the default, kept for scripts that say it')
    .option('--from-file <file>', 'hand off every task in this JSON Lines file (- for stdin), 1000 per request; each line {"to", "title", "payload", ...} as the client\'s handoff takes it')
    .addHelpText('after', `
Example:
  $ baton handoff coder "Write a slugify function" --priority high --payload '{"spec": "ASCII, dashes"}' --deadline +2h
  $ baton handoff coder "Compare the APIs" --input 3f2a1b:competitors.json --expect api-comparison.json --output-schema api-comparison.json=@schema.json
  $ baton handoff --from-file tasks.jsonl
  $ baton handoff auditor "Audit both" --after 3f2a1b 9c8d7e --at +1h`)
    .action((to: string | undefined, title: string | undefined, opts: TaskOptions & { fromFile?: string }, command: Command) => {
      if (opts.fromFile) {
        if (to || title) throw usageError('give either <to_agent> <title> or --from-file, not both', 'e.g. baton handoff --from-file tasks.jsonl');
        return sendMany(command, opts.fromFile);
      }
      if (!to || !title) throw usageError('name the agent and the title', 'e.g. baton handoff coder "Write a slugify function"');
      return send(command, to, title, opts);
    });

  withTaskOptions(program.command('broadcast <title>'))
    .description('offer a task to every agent holding the required capabilities')
    .addHelpText('after', `
Example:
  $ baton broadcast "Review PR 42" --capability review,typescript --priority urgent`)
    .action((title: string, opts: TaskOptions, command: Command) => send(command, null, title, opts));

  program.command('tasks')
    .description('your inbox: highest priority first, then oldest')
    .option('--mine', 'open tasks addressed to you or held by you (the default)')
    .option('--sent', 'tasks you sent')
    .option('--pending', 'tasks you could claim now')
    .option('--all', 'every task you can see')
    .option('--failed', 'failed tasks (of those you sent, unless --mine or --all): your dead letters, to retry with baton retry')
    .addOption(new Option('-s, --status <status...>', 'only these statuses')
      .choices(taskStatuses))
    .option('-n, --limit <n>', 'at most this many', wholeNumber(1, 1000), 50)
    .addHelpText('after', `
Example:
  $ baton tasks --pending
  $ baton tasks --sent --status completed failed --json
  $ baton tasks --failed`)
    .action(async (opts: { mine?: boolean; sent?: boolean; pending?: boolean; all?: boolean; failed?: boolean; status?: TaskStatus[]; limit: number }, command: Command) => {
      const config = configOf(command);
      const box = opts.all ? 'all' : opts.sent || (opts.failed && !opts.mine) ? 'sent' : opts.pending ? 'pending' : 'mine';
      const status = opts.failed ? ['failed' as const] : opts.status ?? (box === 'mine' ? [...openStatuses] : undefined);
      const client = await agentClient(config);
      const tasks = await withBeat(client, client.listTasks({ box, status, limit: opts.limit }));
      emit(config, tasks, taskTable);
    });

  program.command('show <task>')
    .description('a task with its history, its message thread and what its runs spent')
    .option('--chain', 'add what the task and everything under it spent, by model')
    .addHelpText('after', `
Examples:
  $ baton show 3f2a1b
  $ baton show 3f2a1b --chain --json`)
    .action(async (prefix: string, opts: { chain?: boolean }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const id = await client.resolveTaskId(prefix);
      const [task, events, messages, usage, chain] = await withBeat(client, Promise.all([
        client.getTask(id), client.events(id), client.messages({ taskId: id, limit: 200 }), client.runs(id),
        opts.chain ? client.chainUsage(id) : undefined,
      ]));
      // A task under no budget (most) costs no request more.
      const budget = task.budget_id ? await client.budget(id) : undefined;
      emit(config, { task, events, messages: messages.reverse(), usage, ...(chain ? { chain } : {}), ...(budget ? { budget } : {}) }, taskDetail);
    });
}

/** What a chain may spend and what runs spent: `baton budget` and `baton spend`. */
export function registerSpend(program: Command): void {
  program.command('budget <task>')
    .description('the budget over a task\'s chain and what is left; with --tokens or --usd, set or raise it (as the task\'s sender)')
    .option('--tokens <n>', 'what the task and everything under it may spend in tokens: 250000, 250k, 1.5M', tokens)
    .option('--usd <amount>', 'what it may spend in US dollars', dollars)
    .addOption(new Option('--on-spent <what>', 'once spent: the work left waits and you are asked (ask), or it fails (fail)').choices(['ask', 'fail']))
    .addHelpText('after', `
A budget covers the task and everything handed on under it: follow-ups, fan-out parts and joins,
retries. A budget under another is never more than what is left above it. Raised so that some is
left, the work it held goes on.

Examples:
  $ baton budget 3f2a1b
  $ baton budget 3f2a1b --tokens 2M
  $ baton budget 3f2a1b --usd 5 --on-spent fail`)
    .action(async (prefix: string, opts: { tokens?: number; usd?: number; onSpent?: 'ask' | 'fail' }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const id = await client.resolveTaskId(prefix);
      if (opts.tokens || opts.usd || opts.onSpent) await withBeat(client, client.setBudget(id, { tokens: opts.tokens, usd: opts.usd, onSpent: opts.onSpent }));
      const budget = await client.budget(id);
      emit(config, budget, (b) => budgetText(id, b));
    });

  program.command('spend')
    .description('what runs spent, by day, agent and model: of an agent, of a chain, or all you can see')
    .option('--agent <id>', 'only the runs of this agent')
    .option('--chain <task>', 'only the runs of this task and everything under it (id or prefix)')
    .option('--since <when>', 'from this long ago (7d, 24h, 30m) or an ISO time', '7d')
    .addHelpText('after', `
Examples:
  $ baton spend --agent coder
  $ baton spend --chain 3f2a1b --since 30d --json`)
    .action(async (opts: { agent?: string; chain?: string; since: string }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const since = sinceTime(opts.since);
      const taskId = opts.chain ? await client.resolveTaskId(opts.chain) : undefined;
      const rows = await withBeat(client, client.spend({ agent: opts.agent, taskId, since }));
      emit(config, rows, spendTable);
    });
}

/** 7d, 24h or 30m ago, or an ISO time. */
function sinceTime(value: string): string {
  const match = /^(\d+)([mhd])$/.exec(value);
  if (match) return new Date(Date.now() - Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd']).toISOString();
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  throw usageError(`--since ${value} is not a time`, 'Give 7d, 24h, 30m, or an ISO time such as 2026-12-01.');
}
