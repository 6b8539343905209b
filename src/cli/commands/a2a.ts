/** `baton a2a`: Baton's agents served over the Agent2Agent protocol. */
import type { Command } from 'commander';
import { adminClient, agentClient, agentEndpoint, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { integer } from '../inputs.js';
import { usageError } from '../exit.js';

export function registerA2A(program: Command): void {
  program.command('a2a')
    .description('serve Baton\'s agents over the Agent2Agent protocol (A2A 1.0, JSON-RPC and HTTP+JSON): a card and an endpoint per agent')
    .option('--agent <id>', 'the agent that / and /.well-known/agent-card.json stand for')
    .option('--host <host>', 'the address to listen on', '127.0.0.1')
    .option('--port <port>', 'the port to listen on (default: a free one)', integer)
    .option('--public-url <url>', 'the address callers reach this server at, as the cards say it (default: http://host:port)')
    .addHelpText('after', `
Callers send a Baton agent's token as a bearer token and act as that agent: a message to
/agents/<id> hands that agent a task, one to /capabilities/<name> offers it to any agent holding the
capability. Cards are read with the secret key (or, without one, with BATON_AGENT_TOKEN's agent).

Example:
  $ baton a2a --agent researcher --port 4100
  $ curl http://127.0.0.1:4100/agents/coder/.well-known/agent-card.json`)
    .action(async (opts: { agent?: string; host: string; port?: number; publicUrl?: string }, command: Command) => {
      const config = configOf(command);
      const { startA2AServer } = await import('../../a2a/server.js');
      let directory;
      try {
        directory = (await adminClient(config)).db;
      } catch {
        if (!config.agentToken) throw usageError('the A2A server reads the agents it publishes cards for, and has no key to read them with', 'Set SUPABASE_SECRET_KEY, or BATON_AGENT_TOKEN to any agent\'s token.');
        directory = (await agentClient(config)).db;
      }
      const { url, publishableKey, anonKey } = await agentEndpoint({ ...config, agentToken: config.agentToken ?? 'unused' });
      const server = await startA2AServer({
        url, publishableKey, anonKey, directory, defaultAgent: opts.agent, host: opts.host, port: opts.port, publicUrl: opts.publicUrl, log: (await import('../../logger.js')).createLogger(),
      });
      process.stdout.write(`Baton over A2A at ${server.url}\n  cards: ${server.url}/agents/<id>/.well-known/agent-card.json${opts.agent ? `, ${server.url}/.well-known/agent-card.json (${opts.agent})` : ''}\nCtrl-C stops it.\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await server.close();
      exitWhenDone();
    });
}
