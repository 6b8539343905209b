/** Running an agent: agent run (the daemon), agent tick (one round), sweep. */
import type { Command } from 'commander';
import type { AgentOptions, BatonAgent } from '../../agent/daemon.js';
import type { Logger } from '../../logger.js';
import type { BatonConfig } from '../../config.js';
import { adminClient, agentClient, agentEndpoint, configOf } from '../context.js';
import { exitWhenDone } from '../exit.js';
import { emit } from '../output.js';
import { fields } from '../../text/format.js';
import { every, list } from '../inputs.js';

interface DaemonFlags {
  config?: string;
  capabilities?: string[];
  maxConcurrent?: number;
  poll?: string;
  heartbeat?: string;
  every?: number;
  grace?: number;
  metricsPort?: number;
}

/** The daemon and its schedules load only when an agent runs, not for every command. */
async function daemonOf(config: BatonConfig, flags: DaemonFlags, logger?: Logger): Promise<BatonAgent> {
  const [{ createAgent }, { loadAgentFile }, { createLogger }] = await Promise.all([import('../../agent/daemon.js'), import('../../agent/options.js'), import('../../logger.js')]);
  const log = logger ?? createLogger();
  const { every: fileEvery, ...file } = flags.config ? await loadAgentFile(flags.config, log) : {};
  const options: AgentOptions = {
    ...file,
    ...(await agentEndpoint(config)),
    capabilities: flags.capabilities ?? file.capabilities,
    maxConcurrent: flags.maxConcurrent ?? file.maxConcurrent,
    poll: flags.poll ?? file.poll,
    heartbeat: flags.heartbeat ?? file.heartbeat,
    everySeconds: flags.every ?? fileEvery,
    graceSeconds: flags.grace ?? file.graceSeconds,
    metricsPort: flags.metricsPort ?? file.metricsPort,
    log,
  };
  return createAgent(options);
}

function withDaemonOptions(command: Command): Command {
  return command
    .option('--config <file>', 'baton.agent.json: capabilities, executors, schedules (see the README)')
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
  $ BATON_AGENT_TOKEN=… baton agent run --config baton.agent.json`)
    .action(async (flags: DaemonFlags, command: Command) => {
      const log = (await import('../../logger.js')).createLogger();
      const daemon = await daemonOf(configOf(command), flags, log);
      // Listening before start: a signal during the first round still stops the daemon cleanly.
      const shutdown = () => void daemon.stop();
      process.once('SIGINT', shutdown);
      process.once('SIGTERM', shutdown);
      // Started through npx or npm exec, whose process gets the signal and ends without passing it on.
      const { whenLauncherEnds } = await import('../launcher.js');
      whenLauncherEnds(({ pid, what }) => {
        log.warn({ launcher: { pid, command: what } }, 'the process that launched this daemon (npx, npm exec) ended; stopping as on SIGTERM');
        shutdown();
      });
      // A start that failed has stopped what it began; the process exits with the error's code.
      await daemon.start().catch((err: unknown) => { exitWhenDone(); throw err; });
      // Stopped by a signal, or on its own when a later process took over the agent.
      await daemon.stopped;
      exitWhenDone();
    });

  withDaemonOptions(agent.command('tick'))
    .description('one round: register, heartbeat, sweep, claim what fits, run it, report, exit')
    .addHelpText('after', `
Example (system cron, every 15 minutes):
  */15 * * * * cd /srv/agent && BATON_AGENT_TOKEN=… baton agent tick --every 15m --config baton.agent.json`)
    .action(async (flags: DaemonFlags, command: Command) => {
      const config = configOf(command);
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
