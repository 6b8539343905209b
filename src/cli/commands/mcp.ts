/** `baton mcp`: the agent's actions as a Model Context Protocol server over stdio. */
import type { Command } from 'commander';
import { processSettings } from '../../config.js';
import { agentClient, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { integer } from '../inputs.js';

export function registerMcp(program: Command, version: string): void {
  program.command('mcp')
    .description('serve this agent\'s actions as a Model Context Protocol server over stdio, for LLM hosts')
    .option('--no-push', 'do not listen on the push channel; re-read subscribed resources by polling')
    .option('--poll <seconds>', 're-read subscribed resources this often (default 30, or 5 without push)', integer)
    .option('--no-paths', 'refuse artifacts given as paths (when the model does not run on this machine)')
    .addHelpText('after', `
Acts as the agent whose token is in BATON_AGENT_TOKEN (environment or .env), like every command.
Logs go to stderr; stdout carries the protocol.

Example:
  $ BATON_ENV_FILE=~/agents/coder.env baton mcp
  $ claude mcp add baton -e BATON_ENV_FILE=$HOME/agents/coder.env -- baton mcp

In an MCP host's configuration:
  { "mcpServers": { "baton": { "command": "baton", "args": ["mcp"],
      "env": { "BATON_ENV_FILE": "/home/me/agents/coder.env" } } } }`)
    .action(async (opts: { push: boolean; poll?: number; paths: boolean }, command: Command) => {
      const config = configOf(command);
      const client = await agentClient(config);
      // The MCP SDK and the server load only when the command runs: `baton --help` and the other commands skip them.
      const [{ StdioServerTransport }, { createBatonMcp }] = await Promise.all([
        import('@modelcontextprotocol/sdk/server/stdio.js'), import('../../mcp/server.js')]);
      const log = (await import('../../logger.js')).createLogger({ level: processSettings.logLevel('warn'), pretty: false });
      const mcp = createBatonMcp(client, { version, log, push: opts.push, pollSeconds: opts.poll, allowPaths: opts.paths });
      // The agent is heard from (online, its push joined) before the host's handshake can finish: work
      // handed to it the moment the host is connected is not refused as handed to an offline agent.
      await mcp.start();
      const transport = new StdioServerTransport();
      await mcp.server.connect(transport);
      log.info({ agent: client.agentId }, 'serving MCP over stdio');
      // The host ends the session by closing stdin (or with a signal).
      await new Promise<void>((resolve) => {
        process.stdin.once('end', resolve);
        process.stdin.once('close', resolve);
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await mcp.stop();
      exitWhenDone();
    });
}
