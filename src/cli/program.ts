/** The `baton` command tree: every command and option, as commander defines them (the reference is checked against it). */
import { Command } from 'commander';
import { version, versionLine } from '../package.js';
import { paint, safeText } from '../text/format.js';

/** With --json, errors are one JSON document on stderr, usage errors included. */
const wantsJson = (argv: string[]) => argv.includes('--json');

export function errorLine(argv: string[], message: string, hint: string | null | undefined, code: string | null = null): string {
  if (wantsJson(argv)) return `${JSON.stringify({ error: { code, message, hint: hint ?? null } })}\n`;
  return `${paint('red', 'error:')} ${safeText(message)}${hint ? ` — ${safeText(hint)}` : ''}\n`;
}

/**
 * The commands, in groups as their modules add them, each with the top-level names it adds (in the
 * order --help lists them) and the module that adds them, loaded only for a call that names one of
 * them (a call reads and runs one module of the twenty). test/cli.reference.test.ts checks the names
 * against what each group adds.
 */
export const commandGroups: ReadonlyArray<{ names: readonly string[]; load: () => Promise<(program: Command) => void> }> = [
  { names: ['discover', 'health', 'status', 'renew'], load: async () => (await import('./commands/presence.js')).registerPresence },
  { names: ['init'], load: async () => (await import('./commands/init.js')).registerInit },
  { names: ['doctor'], load: async () => (await import('./commands/doctor.js')).registerDoctor },
  { names: ['handoff', 'broadcast', 'tasks', 'show'], load: async () => (await import('./commands/tasks.js')).registerTasks },
  { names: ['budget', 'spend'], load: async () => (await import('./commands/tasks.js')).registerSpend },
  { names: ['claim', 'start', 'progress', 'ask', 'answer', 'reject', 'complete', 'fail', 'cancel', 'release', 'reassign'], load: async () => (await import('./commands/work.js')).registerWork },
  { names: ['artifacts', 'artifact', 'chain'], load: async () => (await import('./commands/artifacts.js')).registerArtifacts },
  { names: ['message', 'inbox'], load: async () => (await import('./commands/messages.js')).registerMessages },
  { names: ['agent', 'sweep'], load: async () => (await import('./commands/agent.js')).registerAgent },
  { names: ['stack'], load: async () => (await import('./commands/stack.js')).registerStack },
  { names: ['keys'], load: async () => (await import('./commands/keys.js')).registerKeys },
  { names: ['retry', 'dead-letters', 'schedule', 'queue'], load: async () => (await import('./commands/workflows.js')).registerWorkflows },
  { names: ['watch'], load: async () => (await import('./commands/watch.js')).registerWatch },
  { names: ['board'], load: async () => (await import('./commands/board.js')).registerBoard },
  { names: ['a2a'], load: async () => (await import('./commands/a2a.js')).registerA2A },
  { names: ['mcp'], load: async () => { const { registerMcp } = await import('./commands/mcp.js'); return (program) => registerMcp(program, version); } },
  { names: ['protocol'], load: async () => (await import('./commands/protocol.js')).registerProtocol },
  { names: ['skill'], load: async () => {
    // The options of `skill install` are the runtimes' own (src/runtimes), loaded for this command only.
    const [{ registerSkill }, { runtimes }] = await Promise.all([import('./commands/skill.js'), import('../runtimes/index.js')]);
    return (program) => registerSkill(program, runtimes.flatMap((r) => r.skills ?? []));
  } },
];

/** The root's options that take a value as the next word (`--url http://…`). */
const valueOptions = new Set(['--url', '--dir', '--api-host', '--api-port', '--db-port']);

/**
 * The groups a call needs: the one of the command it names, as the first word that is not an option.
 * A call that names none (the whole --help), names an unknown one (commander suggests the nearest of
 * all) or says `help` gets every group; `--version` alone gets none. Building sixty commands a call
 * never runs was a fifth of the CLI's own start-up.
 */
function groupsFor(args: string[]): ReadonlyArray<(typeof commandGroups)[number]> {
  let named: string | undefined;
  for (let i = 0; i < args.length && named === undefined; i += 1) {
    if (valueOptions.has(args[i]!)) i += 1;
    else if (!args[i]!.startsWith('-')) named = args[i];
  }
  if (named === undefined) return args.some((a) => a === '-V' || a === '--version') && !args.some((a) => a === '-h' || a === '--help') ? [] : commandGroups;
  const group = commandGroups.find((g) => g.names.includes(named));
  return group ? [group] : commandGroups;
}

export async function buildProgram(argv: string[]): Promise<Command> {
  const program = new Command('baton')
    .description('Hand work between AI agents through a Supabase (Postgres) project.')
    // The migrations it brings are read only when the version is asked for.
    .version(argv.some((a) => a === '-V' || a === '--version') ? versionLine() : version)
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
  const groups = groupsFor(argv.slice(2));
  for (const register of await Promise.all(groups.map((group) => group.load()))) register(program);
  return program;
}

