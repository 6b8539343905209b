/** Running an agent: agent run (the daemon), agent tick (one round), sweep. */
import type { Command } from 'commander';
import type { AgentOptions, BatonAgent } from '../../agent/daemon.js';
import type { Logger } from '../../logger.js';
import type { BatonConfig } from '../../config.js';
import { adminClient, agentClient, agentEndpoint, agentProject, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { emit } from '../output.js';
import { fields } from '../../text/format.js';
import { every, list } from '../inputs.js';
import { namedVariable } from '../../config.js';
import { usageError } from '../exit.js';
import type { Channels } from '../../client/channels.js';

interface DaemonFlags {
  config?: string[];
  capabilities?: string[];
  maxConcurrent?: number;
  poll?: string;
  heartbeat?: string;
  every?: number;
  grace?: number;
  metricsPort?: number;
}

/**
 * The daemon and its schedules load only when an agent runs, not for every command. `file` is one of
 * the configs given; `channels`, those its agents share when one process runs several.
 */
async function daemonOf(config: BatonConfig, flags: DaemonFlags, logger?: Logger, file = flags.config?.[0], channels?: Channels): Promise<BatonAgent> {
  const [{ createAgent }, { loadAgentFile }, { createLogger }] = await Promise.all([import('../../agent/daemon.js'), import('../../agent/options.js'), import('../../logger.js')]);
  const log = logger ?? createLogger();
  const { every: fileEvery, tokenEnv, ...loaded } = file ? await loadAgentFile(file, log) : {};
  const endpoint = await agentEndpoint(tokenEnv ? { ...config, agentToken: tokenOf(tokenEnv, file!) } : config);
  const options: AgentOptions = {
    ...loaded,
    ...endpoint,
    channels,
    capabilities: flags.capabilities ?? loaded.capabilities,
    maxConcurrent: flags.maxConcurrent ?? loaded.maxConcurrent,
    poll: flags.poll ?? loaded.poll,
    heartbeat: flags.heartbeat ?? loaded.heartbeat,
    everySeconds: flags.every ?? fileEvery,
    graceSeconds: flags.grace ?? loaded.graceSeconds,
    metricsPort: flags.metricsPort ?? loaded.metricsPort,
    log,
  };
  return createAgent(options);
}

function tokenOf(name: string, file: string): string {
  const token = namedVariable(name);
  if (!token) throw usageError(`${name} is not set (${file} says its agent's token is there)`, `Set ${name} to the token printed by \`baton agent create <id>\`, in the environment or the project's .env.`);
  return token;
}

/**
 * Several agents in one process, one config each: they share one Realtime connection per 100
 * channels (hosted counts connections per project) and one HTTP pool. Starts all or none.
 */
async function daemonsOf(config: BatonConfig, flags: DaemonFlags, log: Logger): Promise<BatonAgent[]> {
  const files = flags.config ?? [];
  if (flags.capabilities || flags.maxConcurrent !== undefined || flags.metricsPort !== undefined) {
    throw usageError('--capabilities, --max-concurrent and --metrics-port name one agent\'s settings, and more than one --config is given', 'Put them in each agent\'s config file (capabilities, maxConcurrent, metricsPort).');
  }
  const { processChannels } = await import('../../client/channels.js');
  const channels = processChannels(await agentProject(config));
  const daemons: BatonAgent[] = [];
  for (const file of files) {
    const daemon = await daemonOf(config, flags, log, file, channels);
    const same = daemons.find((d) => d.id === daemon.id);
    if (same) throw usageError(`two configs run agent "${daemon.id}" (${files[daemons.indexOf(same)]} and ${file})`, 'Give each config the token of its own agent ("tokenEnv": the variable holding it); one process per agent at most.');
    daemons.push(daemon);
  }
  return daemons;
}

function withDaemonOptions(command: Command): Command {
  return command
    .option('--config <file>', 'baton.agent.json: capabilities, executors, schedules (see the README); agent run takes several, one agent each, run in one process', (v: string, all: string[] = []) => [...all, v])
    .option('-c, --capabilities <list>', 'capabilities to register, comma-separated (repeatable)', list)
    .option('--max-concurrent <n>', 'tasks run at once', (v) => Number(v))
    .option('--poll <cron>', 'claim schedule, node-cron syntax (default */5 * * * * *: every 5 s)')
    .option('--heartbeat <cron>', 'heartbeat schedule (default */30 * * * * *)')
    .option('--every <duration>', 'how often the agent wakes, e.g. 15m for tick from cron; its claims survive two missed wake-ups (default: from the schedules)', every)
    .option('--grace <seconds>', 'on SIGINT/SIGTERM, how long running tasks may finish', (v) => Number(v))
    .option('--metrics-port <port>', 'serve Prometheus metrics at /metrics on this port', (v) => Number(v));
}

export function registerDaemon(agent: Command, program: Command): void {
  withDaemonOptions(agent.command('run'))
    .description('run the agent daemon until SIGINT or SIGTERM')
    .addHelpText('after', `
Example:
  $ BATON_AGENT_TOKEN=… baton agent run --config baton.agent.json
  $ baton agent run --config reviewer.json --config writer.json   # each file's "tokenEnv" names its token`)
    .action(async (flags: DaemonFlags, command: Command) => {
      const log = (await import('../../logger.js')).createLogger();
      const config = configOf(command);
      const daemons = (flags.config?.length ?? 0) > 1 ? await daemonsOf(config, flags, log) : [await daemonOf(config, flags, log)];
      // Listening before start: a signal during the first round still stops the daemons cleanly.
      const shutdown = () => void Promise.all(daemons.map((d) => d.stop()));
      process.once('SIGINT', shutdown);
      process.once('SIGTERM', shutdown);
      // Started through npx or npm exec, whose process gets the signal and ends without passing it on.
      const { whenLauncherEnds } = await import('../launcher.js');
      whenLauncherEnds(({ pid, what }) => {
        log.warn({ launcher: { pid, command: what } }, 'the process that launched this daemon (npx, npm exec) ended; stopping as on SIGTERM');
        shutdown();
      });
      // A start that failed has stopped what it began (and the others are stopped); the process exits
      // with the error's code.
      const started = await Promise.allSettled(daemons.map((d) => d.start()));
      const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) {
        await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
        exitWhenDone();
        throw failed.reason;
      }
      // Stopped by a signal, or each on its own when a later process took over its agent.
      await Promise.all(daemons.map((d) => d.stopped));
      exitWhenDone();
    });

  withDaemonOptions(agent.command('tick'))
    .description('one round: register, heartbeat, sweep, claim what fits, run it, report, exit')
    .addHelpText('after', `
Example (system cron, every 15 minutes):
  */15 * * * * cd /srv/agent && BATON_AGENT_TOKEN=… baton agent tick --every 15m --config baton.agent.json`)
    .action(async (flags: DaemonFlags, command: Command) => {
      const config = configOf(command);
      if ((flags.config?.length ?? 0) > 1) throw usageError('agent tick runs one agent: more than one --config is given', 'Run one tick per agent (one cron line each), or agent run with several configs.');
      const daemon = await daemonOf(config, flags);
      const { ran } = await daemon.tick();
      emit(config, { agent: daemon.id, ran }, () => `${daemon.id}: ran ${ran} task(s).`);
    });

  program.command('sweep')
    .description('re-queue dropped claims, fail tasks out of attempts, cancel overdue ones (as the agent, else the operator)')
    .addHelpText('after', `
Example (system cron, every minute):
  * * * * * baton sweep --json >> /var/log/baton-sweep.log`)
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const report = config.agentToken ? await (await agentClient(config)).sweep() : await (await adminClient(config)).sweep();
      emit(config, report, ({ scheduled, ...counts }) => fields([
        ...Object.entries(counts).map(([k, v]): [string, number] => [k.replaceAll('_', ' '), v]),
        ['run by pg_cron', scheduled ? 'yes (baton-sweep)' : 'no'],
      ]));
    });
}
