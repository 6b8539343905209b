/** Doing the work: claim, start, progress, ask, answer, reject, complete, fail, cancel, release, reassign. */
import type { Command } from 'commander';
import type { BatonClient } from '../../client/agent.js';
import type { Task, TaskResult } from '../../schemas.js';
import { agentClient, configOf } from '../context.js';
import { ExitError, exitCodes } from '../exit.js';
import { collectArtifact, integer, json, list } from '../inputs.js';
import { emit } from '../output.js';
import { taskLine } from '../../text/render.js';

type Act = (client: BatonClient, id: string, task: () => Promise<Task>) => Promise<Task>;

/** Resolves the task prefix, runs `act`, and reports the task as it now stands with `verb`. */
function onTask(verb: string, act: Act) {
  return async (prefix: string, command: Command) => {
    const config = configOf(command);
    const client = await agentClient(config);
    const id = await client.resolveTaskId(prefix);
    const task = await act(client, id, () => client.getTask(id));
    emit(config, task, (t) => taskLine(verb, t));
  };
}

/** The result as given; the database checks its shape and says what is wrong with it. */
function resultOf(opts: { result?: unknown; summary?: string }): TaskResult {
  const given = opts.result ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) return given as TaskResult;
  return { status: 'success', ...given, ...(opts.summary === undefined ? {} : { summary: opts.summary }) } as TaskResult;
}

export function registerWork(program: Command): void {
  registerTaking(program);
  registerOutcomes(program);
}

/** Taking work and working on it: claim, start, progress, ask. */
function registerTaking(program: Command): void {
  program.command('claim [task]')
    .description('claim a task (or the next one) and start it')
    .option('--next', 'claim the next task: addressed to you first, then broadcasts you can do')
    .option('-c, --capability <list>', 'with --next: only tasks requiring these capabilities', list)
    .option('-n, --limit <n>', 'with --next: claim up to this many at once', integer, 1)
    .option('--no-start', 'stop at claimed instead of starting')
    .option('--lease <seconds>', 'how long the claim holds before it may be re-queued', integer)
    .option('--fail-if-empty', 'with --next: exit 1 when there was nothing to claim')
    .addHelpText('after', `
Example:
  $ baton claim 3f2a1b
  $ baton claim --next --capability review --limit 3`)
    .action(async (prefix: string | undefined, opts: { next?: boolean; capability?: string[]; limit: number; start: boolean; lease?: number; failIfEmpty?: boolean }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      if (Boolean(prefix) === Boolean(opts.next)) {
        throw new ExitError('name a task to claim, or pass --next (not both)', exitCodes.usage, 'e.g. baton claim 3f2a1b, or baton claim --next');
      }
      if (prefix) {
        const task = await client.claim(await client.resolveTaskId(prefix), { start: opts.start, leaseSeconds: opts.lease });
        return emit(config, task, (t) => taskLine('Claimed', t));
      }
      const tasks = await client.claimNext({ limit: opts.limit, capabilities: opts.capability, start: opts.start, leaseSeconds: opts.lease });
      emit(config, tasks, (ts) => (ts.length ? ts.map((t) => taskLine('Claimed', t)).join('\n') : 'Nothing to claim right now.'));
      if (tasks.length === 0 && opts.failIfEmpty) {
        throw new ExitError('nothing was claimable', exitCodes.refused, 'Try again later, or widen --capability.');
      }
    });

  program.command('start <task>')
    .description('start a task you claimed')
    .addHelpText('after', '\nExample:\n  $ baton start 3f2a1b')
    .action((prefix: string, _opts, command: Command) =>
      onTask('Started', async (c, id, get) => c.start(id, (await get()).claim_token))(prefix, command));

  program.command('progress <task> <message>')
    .description('report progress on a task you hold; the sender gets it as a message')
    .option('--percent <n>', 'how far along, 0 to 100', integer)
    .addHelpText('after', '\nExample:\n  $ baton progress 3f2a1b "parsed 3 of 5 sources" --percent 60')
    .action((prefix: string, message: string, opts: { percent?: number }, command: Command) =>
      onTask('Progress on', (c, id) => c.progress(id, message, opts.percent))(prefix, command));

  program.command('ask <task> <question>')
    .description('ask the sender a question; the task waits in input_required')
    .addHelpText('after', '\nExample:\n  $ baton ask 3f2a1b "Should the API be REST or GraphQL?"')
    .action((prefix: string, question: string, _opts, command: Command) =>
      onTask('Asked about', (c, id) => c.ask(id, question))(prefix, command));
}

/** Answers and outcomes: answer, reject, complete, fail, cancel, release, reassign. */
function registerOutcomes(program: Command): void {
  program.command('answer <task> <text>')
    .description('answer the question on a task you sent; the task resumes')
    .addHelpText('after', '\nExample:\n  $ baton answer 3f2a1b "REST, versioned under /v1"')
    .action((prefix: string, text: string, _opts, command: Command) =>
      onTask('Answered', (c, id) => c.answer(id, text))(prefix, command));

  program.command('reject <task> <reason>')
    .description('decline a pending task addressed to you')
    .addHelpText('after', '\nExample:\n  $ baton reject 3f2a1b "outside my capabilities"')
    .action((prefix: string, reason: string, _opts, command: Command) =>
      onTask('Rejected', (c, id) => c.reject(id, reason))(prefix, command));

  program.command('complete <task>')
    .description('complete a task you hold, with the protocol\'s result')
    .option('-r, --result <json>', '{status, summary, artifacts, metrics}: inline JSON, @file or - for stdin', json)
    .option('-m, --summary <text>', 'the result\'s summary (status defaults to success)')
    .option('-a, --artifact <name=@file>', 'attach an artifact first (repeatable); name=@file or name=text', collectArtifact)
    .addHelpText('after', `
Example:
  $ baton complete 3f2a1b --summary "slugify written, 12 tests pass"
  $ baton complete 3f2a1b --result @result.json
  $ baton complete 3f2a1b --summary "report attached" --artifact report.md=@out/report.md`)
    .action((prefix: string, opts: { result?: unknown; summary?: string; artifact?: Array<[string, Buffer]> }, command: Command) =>
      onTask('Completed', async (c, id, get) => {
        const result = resultOf(opts);
        const task = await get();
        for (const [name, content] of opts.artifact ?? []) await c.attachArtifact(id, name, content, { task });
        return c.complete(id, task.claim_token, result);
      })(prefix, command));

  program.command('fail <task> <error>')
    .description('report that a task you hold failed')
    .option('--retry', 'put it back to pending while attempts remain')
    .addHelpText('after', '\nExample:\n  $ baton fail 3f2a1b "upstream API returned 503" --retry')
    .action((prefix: string, error: string, opts: { retry?: boolean }, command: Command) =>
      onTask('Failed', async (c, id, get) => c.fail(id, (await get()).claim_token, error, { retry: opts.retry }))(prefix, command));

  program.command('cancel <task>')
    .description('withdraw a task you sent that is not final')
    .option('--reason <text>', 'why, for the holder and the history')
    .addHelpText('after', '\nExample:\n  $ baton cancel 3f2a1b --reason "requirements changed"')
    .action((prefix: string, opts: { reason?: string }, command: Command) =>
      onTask('Cancelled', (c, id) => c.cancel(id, opts.reason))(prefix, command));

  program.command('release <task>')
    .description('give a task you hold back to pending (the attempt does not count)')
    .option('--reason <text>', 'why, for the history')
    .addHelpText('after', '\nExample:\n  $ baton release 3f2a1b --reason "shutting down"')
    .action((prefix: string, opts: { reason?: string }, command: Command) =>
      onTask('Released', async (c, id, get) => c.release(id, (await get()).claim_token, opts.reason))(prefix, command));

  program.command('reassign <task> <agent>')
    .description('give a task you sent to another agent (noted in its history)')
    .option('--reason <text>', 'why, for the history')
    .addHelpText('after', '\nExample:\n  $ baton reassign 3f2a1b reviewer-2 --reason "coder is overloaded"')
    .action((prefix: string, agent: string, opts: { reason?: string }, command: Command) =>
      onTask('Reassigned', (c, id) => c.reassign(id, agent, opts.reason))(prefix, command));
}

