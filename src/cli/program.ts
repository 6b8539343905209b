/** The `baton` command tree: every command and option, as commander defines them (the reference is checked against it). */
import { Command } from 'commander';
import { version } from './package.js';
import { registerA2A } from './commands/a2a.js';
import { registerAgent } from './commands/agent.js';
import { registerArtifacts } from './commands/artifacts.js';
import { registerBoard } from './commands/board.js';
import { registerDoctor } from './commands/doctor.js';
import { registerInit } from './commands/init.js';
import { registerKeys } from './commands/keys.js';
import { registerMcp } from './commands/mcp.js';
import { registerMessages } from './commands/messages.js';
import { registerPresence } from './commands/presence.js';
import { registerProtocol } from './commands/protocol.js';
import { registerSkill } from './commands/skill.js';
import { registerStack } from './commands/stack.js';
import { registerTasks } from './commands/tasks.js';
import { registerWatch } from './commands/watch.js';
import { registerWork } from './commands/work.js';
import { registerWorkflows } from './commands/workflows.js';
import { paint, safeText } from '../text/format.js';

/** With --json, errors are one JSON document on stderr, usage errors included. */
const wantsJson = (argv: string[]) => argv.includes('--json');

export function errorLine(argv: string[], message: string, hint: string | null | undefined, code: string | null = null): string {
  if (wantsJson(argv)) return `${JSON.stringify({ error: { code, message, hint: hint ?? null } })}\n`;
  return `${paint('red', 'error:')} ${safeText(message)}${hint ? ` — ${safeText(hint)}` : ''}\n`;
}

export function buildProgram(argv: string[]): Command {
  const program = new Command('baton')
    .description('Hand work between AI agents through a Supabase (Postgres) project.')
    .version(version)
    .option('--json', 'print one JSON document instead of text')
    .option('--url <url>', 'the project API URL (default: SUPABASE_URL, else the local stack)')
    .option('--dir <folder>', 'the local stack folder (default: BATON_STACK_DIR, else .baton/stack)')
    .option('--api-host <address>', 'where the local stack API listens (default: BATON_API_HOST, else 127.0.0.1; 0.0.0.0 serves other hosts)')
    .option('--api-port <port>', 'the local stack API port (default: BATON_API_PORT, else 54321)')
    .option('--db-port <port>', 'the local stack database port (default: BATON_DB_PORT, else 54322)')
    // Each command's --help lists the options every command takes (--dir, --api-port, …) too.
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({
      // One line per error (one JSON document with --json), like every other error the CLI reports.
      outputError: (text, write) => write(errorLine(argv, text.trim().replace(/^error:\s*/, '').replace(/\s*\n\s*/g, ' '), 'see --help', 'USAGE')),
    })
    .addHelpText('after', `
Configuration comes from flags, then the environment, then the project's .env (this folder's, or the
nearest above it with .baton/ or Baton's settings in a .env, as git finds a repository):
  SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY   the project (default: the local stack, see baton stack start)
  BATON_AGENT_TOKEN                        the agent you act as (baton agent create prints it)
  SUPABASE_SECRET_KEY, BATON_SIGNING_KEY   operator commands (baton agent ...)
  Legacy keys work too: SUPABASE_ANON_KEY, SUPABASE_SERVICE_ROLE_KEY, SUPABASE_JWT_SECRET.

Exit codes: 0 success, 1 refused or failed (not found, forbidden, invalid transition, ...), 2 usage error,
3 the stack is not running (stack status), 75 the API or database not there now: run it again.

Example:
  $ baton stack start && eval "$(baton stack env | sed 's/^/export /')"
  $ export BATON_AGENT_TOKEN=$(baton agent create coder --capabilities code --json | jq -r .token)
  $ baton claim --next`)
    .exitOverride();
  registerPresence(program);
  registerInit(program);
  registerDoctor(program);
  registerTasks(program);
  registerWork(program);
  registerArtifacts(program);
  registerMessages(program);
  registerAgent(program);
  registerStack(program);
  registerKeys(program);
  registerWorkflows(program);
  registerWatch(program);
  registerBoard(program);
  registerA2A(program);
  registerMcp(program, version);
  registerProtocol(program);
  registerSkill(program);
  return program;
}

