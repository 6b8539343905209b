/** Who is around: discover, status, renew. */
import type { Command } from 'commander';
import { agentClient, checkApi, configOf, withBeat } from '../context.js';
import { ExitError, exitCodes } from '../exit.js';
import { every, list } from '../inputs.js';
import { emit } from '../output.js';
import { table } from '../../text/format.js';
import { presenceTable, rhythmOf, shortId } from '../../text/render.js';

export function registerPresence(program: Command): void {
  registerLooking(program);
  registerBeing(program);
}

/** Who is around: discover, health. */
function registerLooking(program: Command): void {
  program.command('discover')
    .description('online agents (heard from within baton_settings.offline_after, or two of their wake-ups), with what they can do')
    .option('-c, --capability <list>', 'only agents holding all of these (repeatable)', list)
    .option('--all', 'include offline agents')
    .addHelpText('after', `
Example:
  $ baton discover --capability review
  $ baton discover --all --json`)
    .action(async (opts: { capability?: string[]; all?: boolean }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const agents = await withBeat(client, client.discover({ capabilities: opts.capability, includeOffline: opts.all }));
      emit(config, agents, presenceTable);
    });

  program.command('health')
    .description('exit 0 if the API answers (and accepts the agent\'s token, when one is set); writes nothing, so it is no heartbeat')
    .addHelpText('after', `
For container health checks and scripts that wait for a stack.

Example:
  $ baton health && echo up
  $ BATON_STACK_DIR=/data baton health`)
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const checked = await checkApi(config);
      emit(config, { ok: true, ...checked }, () => `ok: ${checked.url} answers${checked.asAgent ? ' and accepts the agent token' : ''}`);
    });
}

/** Saying one is alive and keeping claims: status, renew. */
function registerBeing(program: Command): void {
  program.command('status [message]')
    .description('say you are alive, with a status line and how often you wake; your claims survive two missed wake-ups')
    .option('--every <duration>', 'how often you wake, e.g. 15m for a 15-minute cron or HEARTBEAT', every)
    .option('--stopped', 'say you stopped cleanly (offline until your next call)')
    .option('--restarted', 'say you started afresh: every task you held goes back at once (use only when no earlier run of yours still works)')
    .addHelpText('after', `
Any call you make that can write (progress, claim, complete, ...) and every baton command counts as a
heartbeat too. Without --every, a claim survives its lease (5 minutes unless the task says otherwise)
past your last call; with it, two of your wake-ups (or the lease, if longer).

With --restarted (a bot whose machine rebooted, say), the tasks you held go back by the rule for a lost
claim: one never started to pending, one in progress to pending after its attempt (or failed on its
last), each with the reason in its history. A daemon does this itself whenever it starts.

Example:
  $ baton status "reviewing PR 42" --every 15m
  $ baton status --every 15m
  $ baton status --restarted`)
    .action(async (message: string | undefined, opts: { every?: number; stopped?: boolean; restarted?: boolean }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const began = opts.restarted ? await client.beginIncarnation() : undefined;
      const me = await client.heartbeat(message, { active: !opts.stopped, everySeconds: opts.every });
      const rhythm = rhythmOf(me);
      const handedBack = began ? began.requeued_unstarted + began.requeued_expired + began.dead_lettered : 0;
      emit(config, began ? { ...me, handed_back: began } : me, (a) =>
        `${a.id}: ${a.status_message ?? '(no status)'} (heartbeat sent${rhythm ? `; wakes every ${rhythm}` : ''}${a.is_active ? '' : '; stopped'})`
        + (began ? `\nStarted afresh: ${handedBack} task(s) you held went back.` : ''));
    });

  program.command('renew [tasks...]')
    .description('restart the leases of tasks you hold (all of them by default) and say until when each holds')
    .addHelpText('after', `
Example:
  $ baton renew
  $ baton renew 3f2a1b`)
    .action(async (prefixes: string[], _opts, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const ids = await Promise.all(prefixes.map((p) => client.resolveTaskId(p)));
      const checks = await client.renew(ids);
      emit(config, checks, (rows) => table(rows, [
        ['TASK', (c) => shortId(c.task_id)],
        ['STATUS', (c) => c.status],
        ['HELD', (c) => (c.current ? 'yes' : 'no')],
        ['UNTIL', (c) => (c.current ? c.lease_expires_at : '-')],
      ], 'You hold no tasks.'));
      const lost = checks.filter((c) => !c.current);
      if (lost.length) {
        throw new ExitError(`you do not hold ${lost.map((c) => `${shortId(c.task_id)} (${c.status ?? 'unknown'})`).join(', ')}`,
          exitCodes.refused, 'Claim it again if it is pending: baton claim <task>.');
      }
    });
}
