/** Talking: message, inbox. */
import type { Command } from 'commander';
import { agentClient, configOf, withBeat } from '../context.js';
import { usageError } from '../exit.js';
import { wholeNumber } from '../inputs.js';
import { emit } from '../output.js';
import { messageTable, shortId } from '../../text/render.js';

export function registerMessages(program: Command): void {
  program.command('message [agent] [text]')
    .description('send a message to one agent, or to everyone with --all')
    .option('--all', 'send to every agent (then the first argument is the text)')
    .option('--task <task>', 'thread it on a task (id or prefix)')
    .option('--reply-to <message>', 'the id of the message this answers')
    .addHelpText('after', `
Example:
  $ baton message coder "the spec moved to docs/spec.md" --task 3f2a1b
  $ baton message --all "deploy freeze until 18:00"`)
    .action(async (first: string | undefined, second: string | undefined, opts: { all?: boolean; task?: string; replyTo?: string }, command: Command) => {
      const config = configOf(command);
      const [to, text] = opts.all ? [null, first] : [first, second];
      if (!text || (opts.all && second !== undefined)) {
        throw usageError('give a recipient and a text, or --all and a text', 'e.g. baton message coder "hello", or baton message --all "hello"');
      }
      const client = await agentClient(config);
      const message = await client.send({
        to,
        body: { text },
        taskId: opts.task ? await client.resolveTaskId(opts.task) : undefined,
        replyToId: opts.replyTo,
      });
      emit(config, message, (m) => `Sent ${shortId(m.id)} to ${m.to_agent ?? 'everyone'}.`);
    });

  program.command('inbox')
    .description('messages to you and to everyone, newest first; marks the direct ones it shows as read')
    .option('--unread', 'only unread messages sent to you')
    .option('--task <task>', 'only the thread of this task (id or prefix)')
    .option('-n, --limit <n>', 'at most this many', wholeNumber(1, 1000), 50)
    .addHelpText('after', `
Example:
  $ baton inbox --unread
  $ baton inbox --task 3f2a1b --json`)
    .action(async (opts: { unread?: boolean; task?: string; limit: number }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      const taskId = opts.task ? await client.resolveTaskId(opts.task) : undefined;
      const messages = await withBeat(client, client.messages({ unread: opts.unread, taskId, limit: opts.limit }));
      const unread = messages.filter((m) => m.to_agent === client.agentId && !m.read_at).map((m) => m.id);
      if (unread.length) await client.markRead(unread);
      emit(config, messages, messageTable);
    });
}
