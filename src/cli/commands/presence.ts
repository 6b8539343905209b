/** Who is around: discover, status. */
import type { Command } from 'commander';
import { agentClient, configOf } from '../context.js';
import { list } from '../inputs.js';
import { emit } from '../output.js';
import { presenceTable } from '../render.js';

export function registerPresence(program: Command): void {
  program.command('discover')
    .description('online agents (heartbeat within baton_settings.offline_after), with what they can do')
    .option('-c, --capability <list>', 'only agents holding all of these (repeatable)', list)
    .option('--all', 'include offline agents')
    .addHelpText('after', `
Example:
  $ baton discover --capability review
  $ baton discover --all --json`)
    .action(async (opts: { capability?: string[]; all?: boolean }, command: Command) => {
      const config = configOf(command);
      const agents = await agentClient(config).discover({ capabilities: opts.capability, includeOffline: opts.all });
      emit(config, agents, presenceTable);
    });

  program.command('status <message>')
    .description('set your status line, with a heartbeat')
    .addHelpText('after', '\nExample:\n  $ baton status "reviewing PR 42"')
    .action(async (message: string, _opts, command: Command) => {
      const config = configOf(command);
      const me = await agentClient(config).heartbeat(message);
      emit(config, me, (a) => `${a.id}: ${a.status_message} (heartbeat sent)`);
    });
}
