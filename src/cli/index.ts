#!/usr/bin/env node
/** The `baton` command: wires the command groups; errors leave through the one exit path below. */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { packageRoot } from '../stack/paths.js';
import { registerAgent } from './commands/agent.js';
import { registerStack } from './commands/stack.js';
import { exitCodes, toExitError } from './exit.js';
import { paint } from './output.js';

const { version } = JSON.parse(readFileSync(`${packageRoot}/package.json`, 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('baton')
    .description('Hand work between AI agents through a Supabase (Postgres) project.')
    .version(version)
    .option('--json', 'print one JSON document instead of text')
    .option('--url <url>', 'the project API URL (default: SUPABASE_URL, else the local stack)')
    .option('--dir <folder>', 'the local stack folder (default: BATON_STACK_DIR, else .baton/stack)')
    .option('--api-port <port>', 'the local stack API port (default: BATON_API_PORT, else 54321)')
    .option('--db-port <port>', 'the local stack database port (default: BATON_DB_PORT, else 54322)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerStack(program);
  registerAgent(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return exitCodes.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed its message (or the help or version it was asked for).
      return err.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    }
    const exit = toExitError(err);
    const json = argv.includes('--json');
    if (json) {
      process.stderr.write(`${JSON.stringify({ error: { code: exit.code ?? null, message: exit.message, hint: exit.hint ?? null } })}\n`);
    } else {
      process.stderr.write(`${paint('red', 'error:')} ${exit.message}${exit.hint ? ` — ${exit.hint}` : ''}\n`);
    }
    return exit.exitCode;
  }
}

process.exitCode = await main(process.argv);
