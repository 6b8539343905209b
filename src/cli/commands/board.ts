/** `baton board`: the web board, served on this machine for the people who run the agents. */
import { Option, type Command } from 'commander';
import { adminClient, agentClient, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { integer } from '../inputs.js';

export function registerBoard(program: Command): void {
  program.command('board')
    .description('serve a live web board of the agents and their tasks on this machine, and print its URL')
    .option('--host <host>', 'the address to listen on (others than loopback can reach it, with the URL\'s token)', '127.0.0.1')
    .option('--port <port>', 'the port to listen on (default: a free one)', integer)
    .addOption(new Option('--as <identity>', 'whom the board acts as: the agent of BATON_AGENT_TOKEN, or the operator (secret key; sees everything)').choices(['agent', 'operator']))
    .option('--open', 'open the URL in the default browser')
    .addHelpText('after', `
The board acts as the agent whose token is in BATON_AGENT_TOKEN, and shows exactly what that agent may
see; without one (or with --as operator) it acts as the operator with the project's secret key. The key
stays in this process: the browser holds only a session cookie, given for the URL's token (which stays
valid while the board runs: a script may send it as Authorization: Bearer, and act without a CSRF token).

Example:
  $ baton board
  $ baton board --as operator --port 4400 --open`)
    .action(async (opts: { host: string; port?: number; as?: 'agent' | 'operator'; open?: boolean }, command: Command) => {
      const config = configOf(command);
      const as = opts.as ?? (config.agentToken ? 'agent' : 'operator');
      const [{ BoardData }, { startBoard }] = await Promise.all([import('../../board/data.js'), import('../../board/server.js')]);
      const data = new BoardData(as === 'agent' ? { kind: 'agent', client: await agentClient(config) } : { kind: 'operator', admin: await adminClient(config) });
      const log = (await import('../../logger.js')).createLogger();
      const board = await startBoard({ data, host: opts.host, port: opts.port, log });
      const who = data.who.kind === 'agent' ? `agent ${data.who.id}` : 'the operator';
      process.stdout.write(`Baton board, as ${who}: ${board.url}\nCtrl-C stops it.\n`);
      if (opts.open) (await import('node:child_process')).spawn(process.platform === 'darwin' ? 'open' : 'xdg-open', [board.url], { stdio: 'ignore', detached: true }).on('error', () => undefined).unref();
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await board.close();
      exitWhenDone();
    });
}
