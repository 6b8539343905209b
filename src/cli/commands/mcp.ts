/** `baton mcp`: the agent's actions as a Model Context Protocol server over stdio, or over HTTP (`--http`). */
import type { Command } from 'commander';
import { processSettings } from '../../config.js';
import { agentClient, agentProject, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { integer } from '../inputs.js';

export function registerMcp(program: Command, version: string): void {
  program.command('mcp')
    .description('serve this agent\'s actions as a Model Context Protocol server over stdio, for LLM hosts')
    .option('--no-push', 'do not listen on the push channel; re-read subscribed resources by polling')
    .option('--poll <seconds>', 're-read subscribed resources this often (default 30, or 5 without push)', integer)
    .option('--no-paths', 'refuse artifacts given as paths (when the model does not run on this machine)')
    .option('--http <port>', 'serve over Streamable HTTP at http://<host>:<port>/mcp instead of stdio (0: a free port), one agent per bearer token', integer)
    .option('--host <address>', 'with --http: the address to listen on (default 127.0.0.1; 0.0.0.0 behind a TLS proxy)')
    .option('--public-url <url>', 'with --http: the address hosts reach it at, behind a proxy (for its metadata)')
    .addHelpText('after', `
Over stdio, acts as the agent whose token is in BATON_AGENT_TOKEN (environment or .env), like every
command; logs go to stderr, stdout carries the protocol. Over HTTP, each session acts as the agent whose
token it sends (Authorization: Bearer …); the first line on stdout is the endpoint's URL.

Example:
  $ BATON_ENV_FILE=~/agents/coder.env baton mcp
  $ claude mcp add baton -e BATON_ENV_FILE=$HOME/agents/coder.env -- baton mcp

Over HTTP, for a host on another machine (behind a TLS proxy):
  $ baton mcp --http 8765 --host 0.0.0.0 --public-url https://mcp.example.org
  $ claude mcp add --transport http baton https://mcp.example.org/mcp --header "Authorization: Bearer $TOKEN"

In an MCP host's configuration:
  { "mcpServers": { "baton": { "command": "baton", "args": ["mcp"],
      "env": { "BATON_ENV_FILE": "/home/me/agents/coder.env" } } } }`)
    .action(async (opts: { push: boolean; poll?: number; paths: boolean; http?: number; host?: string; publicUrl?: string }, command: Command) => {
      const config = configOf(command);
      if (opts.http !== undefined) return serveHttp(config, version, opts);
      const client = await agentClient(config);
      // The MCP SDKs and the server load only when the command runs: `baton --help` and the other commands skip them.
      const [{ serveBatonStdio }, { createBatonMcp }] = await Promise.all([import('../../mcp/stdio.js'), import('../../mcp/server.js')]);
      const log = (await import('../../logger.js')).createLogger({ level: processSettings.logLevel('warn'), pretty: false });
      const mcp = createBatonMcp(client, { version, log, push: opts.push, pollSeconds: opts.poll, allowPaths: opts.paths });
      // The agent is heard from (online, its push joined) before the host's first request is answered
      // (a 2026 host's server/discover probe aside): work handed to it the moment the host is connected
      // is not refused as handed to an offline agent.
      const served = await serveBatonStdio(mcp, log);
      log.info({ agent: client.agentId }, 'serving MCP over stdio');
      // The host ends the session by closing stdin (or with a signal).
      await new Promise<void>((resolve) => {
        void served.closed.then(resolve);
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await served.stop();
      exitWhenDone();
    });
}

async function serveHttp(config: ReturnType<typeof configOf>, version: string, opts: { push: boolean; poll?: number; paths: boolean; http?: number; host?: string; publicUrl?: string }): Promise<void> {
  const [{ serveMcpHttp }, { createLogger }] = await Promise.all([import('../../mcp/http.js'), import('../../logger.js')]);
  const log = createLogger({ level: processSettings.logLevel('info'), pretty: false });
  const server = await serveMcpHttp({
    project: await agentProject(config), port: opts.http!, host: opts.host, publicUrl: opts.publicUrl,
    // A host elsewhere names no paths of this machine: an artifact given as a path would read this machine's files.
    version, log, push: opts.push, pollSeconds: opts.poll, allowPaths: false,
  });
  process.stdout.write(`${server.url}\n`);
  log.info({ url: server.url }, 'serving MCP over HTTP');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
  exitWhenDone();
}
