import path from 'node:path';
import type { Command } from 'commander';
import { stackPaths } from '../../stack/paths.js';
import { cliEntry, configOf, settingsLines, writeSecretFile } from '../context.js';
import { ExitError, exitCodes, exitWhenDone, usageError } from '../exit.js';
import { emit } from '../output.js';
import { fields } from '../../text/format.js';

export function registerStack(program: Command): void {
  const stack = program.command('stack').description('run the embedded Supabase-compatible stack (Postgres, PostgREST, gateway)');

  stack.command('start')
    .description('start the stack in the background and wait until its API answers')
    .option('--realtime-plan <plan>', realtimePlanHelp)
    .addHelpText('after', '\nExample:\n  $ baton stack start --api-port 54321 --db-port 54322\n  $ baton stack start --realtime-plan pro\n  $ eval "$(baton stack env)"')
    .action(async (opts: { realtimePlan?: string }, command: Command) => {
      const config = configOf(command);
      const realtimePlan = await checkedPlan(opts.realtimePlan ?? config.realtimePlan);
      const { alreadyRunning, runtime } = await (await import('../../stack/background.js')).startInBackground({
        dir: config.stackDir, apiHost: config.apiHost, apiPort: config.apiPort, dbPort: config.dbPort, cliEntry, realtimePlan,
      });
      emit(config, { running: true, alreadyRunning, ...runtime, dir: config.stackDir }, () =>
        alreadyRunning
          ? `The stack in ${config.stackDir} is already running (API on port ${runtime.apiPort}, pid ${runtime.pid}).`
          : `Stack started: API http://127.0.0.1:${runtime.apiPort}, database port ${runtime.dbPort} (pid ${runtime.pid}).\n` +
            'Print its settings with: baton stack env');
    });

  stack.command('stop')
    .description('stop the background stack; its data stays for the next start')
    .addHelpText('after', '\nExample:\n  $ baton stack stop')
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const stopped = await (await import('../../stack/background.js')).stopInBackground(config.stackDir);
      emit(config, { stopped, dir: config.stackDir }, () =>
        stopped ? 'Stack stopped; its data is kept.' : `No stack is running in ${config.stackDir}.`);
    });
  registerStackInspection(stack);
  registerStackServe(stack);
}

const realtimePlanHelp = 'the Realtime quotas to keep, as a hosted plan does: free (the default), pro, team, or numbers (free,connections=5,messages=3); BATON_REALTIME_PLAN';

/** The plan as given, once it reads as one (a usage error that says how to write it, if not). */
async function checkedPlan(plan: string | undefined): Promise<string | undefined> {
  if (plan === undefined) return undefined;
  const { parseRealtimePlan } = await import('../../stack/quotas.js');
  try {
    parseRealtimePlan(plan);
  } catch (err) {
    throw usageError((err as Error).message, 'e.g. --realtime-plan pro, or --realtime-plan free,connections=5 (docs/stack.md, "Hosted\'s quotas")');
  }
  return plan;
}

/** The --dir the command was given, to repeat in a hint; none if the folder came from elsewhere. */
function dirFlag(command: Command): string {
  const { dir } = command.optsWithGlobals<{ dir?: string }>();
  return dir ? ` --dir ${/^[\w./-]+$/.test(dir) ? dir : `'${dir.replace(/'/g, "'\\''")}'`}` : '';
}

/** Running the stack in the foreground, as a container or a service manager runs it. */
function registerStackServe(stack: Command): void {
  stack.command('serve')
    .description('run the stack in the foreground until SIGINT or SIGTERM (what `start` runs in the background; for containers and service managers)')
    .option('--realtime-plan <plan>', realtimePlanHelp)
    .addHelpText('after', '\nExample:\n  $ baton stack serve --dir /data --api-host 0.0.0.0')
    .action(async (opts: { realtimePlan?: string }, command: Command) => {
      const config = configOf(command);
      const realtimePlan = await checkedPlan(opts.realtimePlan ?? config.realtimePlan);
      // Postgres, PostgREST and the gateway load only for the command that runs them.
      const { startStack } = await import('../../stack/index.js');
      const log = (await import('../../logger.js')).createLogger();
      const running = await startStack({ dir: config.stackDir, apiHost: config.apiHost, apiPort: config.apiPort, dbPort: config.dbPort, log, realtimePlan });
      await new Promise<void>((resolve) => {
        // Stopped once, whatever comes after: a second signal (a second Ctrl-C, a supervisor that
        // repeats itself) must not end the process halfway, leaving its Postgres and PostgREST running.
        let stopping = false;
        const shutdown = (signal: string) => {
          if (stopping) return void log.info({ signal }, 'already stopping the stack');
          stopping = true;
          log.info({ signal }, 'stopping the stack');
          running.stop().then(resolve, (err) => { log.error({ err }, 'stop failed'); resolve(); });
        };
        process.on('SIGTERM', () => shutdown('SIGTERM'));
        process.on('SIGINT', () => shutdown('SIGINT'));
      });
      log.info({ log: stackPaths(config.stackDir).log }, 'stack stopped');
      // Everything is stopped; a keep-alive socket or a client's timer must not hold the exit for seconds.
      exitWhenDone();
    });
}

/** Looking at the stack: status and env. */
function registerStackInspection(stack: Command): void {
  stack.command('status')
    .description('say whether the stack runs, where, and whether its API and database answer now')
    .addHelpText('after', `
Exits 0 when the stack runs and answers; 1 when it runs but its API or database does not answer (a
crashed Postgres or PostgREST is started again by the stack within seconds); 3 when it is not running
(as service managers' status commands do), so that \`baton stack status || baton stack start\` works.

Example:
  $ baton stack status --json`)
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const { running, api, database, runtime } = await (await import('../../stack/background.js')).stackHealth(config.stackDir);
      const healthy = running && api && database;
      const status = !running ? 'stopped' : healthy ? 'running' : 'degraded';
      const word = (up: boolean) => (up ? 'answering' : 'not answering');
      emit(config, { running, status, apiAnswering: api, databaseAnswering: database, dir: config.stackDir, ...runtime }, () =>
        runtime
          ? fields([
            ['status', status], ['api', `http://127.0.0.1:${runtime.apiPort} (${word(api)})`],
            ['database', `port ${runtime.dbPort} (${word(database)})`],
            ['pid', runtime.pid], ['since', runtime.startedAt], ['folder', config.stackDir],
          ])
          : `not running (folder ${config.stackDir}); start it with: baton stack start${dirFlag(command)}`);
      if (!running) process.exitCode = exitCodes.notRunning;
      else if (!healthy) process.exitCode = exitCodes.refused;
    });

  stack.command('env')
    .description('print the settings agents and tools need, as KEY=VALUE lines')
    .option('--write-env <file>', 'write them to a new file that only you may read (mode 0600), e.g. .env, instead of printing them')
    .addHelpText('after', `
With --url, prints the settings as another host sees the stack (a container, say), from the stack's
folder alone, whether or not the stack runs here; DATABASE_URL is left out, as the database listens on
its own host's loopback only.

The settings hold the secret key and the database password: --write-env writes them readable by you
alone, where "> .env" makes a file anyone on the machine may read. Every baton command in that folder,
or in one below it, reads its .env.

Example:
  $ baton stack env --write-env .env
  $ eval "$(baton stack env | sed 's/^/export /')"
  $ baton stack env --dir /data --url http://stack:54321`)
    .action(async (opts: { writeEnv?: string }, command: Command) => {
      const config = configOf(command);
      const seenFrom = command.optsWithGlobals<{ url?: string }>().url;
      const { readRuntime, readSecrets, stackEnv } = await import('../../stack/state.js');
      const runtime = readRuntime(config.stackDir);
      const secrets = readSecrets(config.stackDir);
      if (!secrets || (!runtime && !seenFrom)) {
        throw new ExitError(`no stack is running in ${config.stackDir}`, exitCodes.refused,
          'Start it first (baton stack start), or name the folder of one that runs elsewhere with --dir and its URL with --url.');
      }
      const { DATABASE_URL, ...rest } = stackEnv(secrets, runtime?.apiPort ?? config.apiPort, runtime?.dbPort ?? config.dbPort);
      const env = seenFrom ? { ...rest, SUPABASE_URL: seenFrom.replace(/\/+$/, '') } : { ...rest, DATABASE_URL };
      if (opts.writeEnv) {
        writeSecretFile(opts.writeEnv, settingsLines(env));
        emit(config, { written: path.resolve(opts.writeEnv) }, () => `Wrote ${Object.keys(env).length} settings to ${path.resolve(opts.writeEnv!)} (readable by you only).`);
        return;
      }
      emit(config, env, settingsLines);
    });
}
