import type { Command } from 'commander';
import type { Agent } from '../../schemas.js';
import { adminClient, assertNewEnvFile, configOf, writeAgentEnvFile } from '../context.js';
import { every, expiresIn, list } from '../inputs.js';
import { rhythmOf } from '../../text/render.js';
import { emit } from '../output.js';
import { ago, fields, table } from '../../text/format.js';
import { registerDaemon } from './daemon.js';

function agentDetail(agent: Agent): string {
  return fields([
    ['id', agent.id],
    ['display name', agent.display_name],
    ['capabilities', agent.capabilities.join(', ') || '-'],
    ['max concurrent', agent.max_concurrent],
    ['active', agent.is_active ? 'yes' : 'no'],
    ['last heard from', ago(agent.last_heartbeat)],
    ['wakes every', rhythmOf(agent)],
    ['status', agent.status_message],
    ['created', agent.created_at],
  ]);
}

export function registerAgent(program: Command): void {
  const agent = program.command('agent').description('run an agent daemon; register agents and manage their tokens (service-role key)');
  registerDaemon(agent, program);

  agent.command('create <id>')
    .description('register an agent and print its access token')
    .option('-c, --capabilities <list>', 'comma-separated capabilities (repeatable)', list)
    .option('-n, --display-name <name>', 'a name for people')
    .option('--max-concurrent <n>', 'how many tasks it may hold at once', (v) => Number(v))
    .option('--every <duration>', 'how often it wakes, e.g. 15m for a 15-minute cron (its claims survive two missed wake-ups)', every)
    .option('--expires-in <duration>', 'token lifetime, e.g. 90d (default: until revoked)', expiresIn)
    .option('--write-env <file>', 'also write the agent\'s settings (URL, API key, id, token) to this new file, readable by its owner only')
    .addHelpText('after', '\nExample:\n  $ baton agent create cheenu --capabilities research,web --display-name "Cheenu"\n  $ export BATON_AGENT_TOKEN=$(baton agent create coder --json | jq -r .token)\n  $ baton agent create coder -c code --write-env ../coder/.env')
    .action(async (id: string, opts: { capabilities?: string[]; displayName?: string; maxConcurrent?: number; every?: number; expiresIn?: Date; writeEnv?: string }, command: Command) => {
      const config = configOf(command);
      if (opts.writeEnv) await assertNewEnvFile(config, opts.writeEnv);
      const { agent: created, token } = await (await adminClient(config)).createAgent({
        id,
        capabilities: opts.capabilities,
        displayName: opts.displayName,
        maxConcurrent: opts.maxConcurrent,
        pollIntervalSeconds: opts.every,
        tokenExpiresAt: opts.expiresIn,
      });
      if (opts.writeEnv) await writeAgentEnvFile(config, opts.writeEnv, created.id, token);
      emit(config, { id: created.id, token, agent: created, ...(opts.writeEnv ? { envFile: opts.writeEnv } : {}) }, () =>
        opts.writeEnv
          ? `Agent ${created.id} registered; its settings and token are in ${opts.writeEnv} (run it with BATON_ENV_FILE=${opts.writeEnv}, or as .env in its folder).`
          : `Agent ${created.id} registered. Its token (keep it secret; it acts as this agent):\n${token}\n\n` +
            `Use it with: export BATON_AGENT_TOKEN=<token>`);
    });

  agent.command('token <id>')
    .description('issue another token for an existing agent')
    .option('--expires-in <duration>', 'token lifetime, e.g. 90d (default: until revoked)', expiresIn)
    .option('--write-env <file>', 'write the agent\'s settings with the new token to this new file instead of printing the token')
    .addHelpText('after', '\nExample:\n  $ baton agent token cheenu --expires-in 30d')
    .action(async (id: string, opts: { expiresIn?: Date; writeEnv?: string }, command: Command) => {
      const config = configOf(command);
      if (opts.writeEnv) await assertNewEnvFile(config, opts.writeEnv);
      const token = await (await adminClient(config)).issueToken(id, opts.expiresIn);
      if (opts.writeEnv) await writeAgentEnvFile(config, opts.writeEnv, id, token);
      emit(config, { id, token, ...(opts.writeEnv ? { envFile: opts.writeEnv } : {}) }, () =>
        opts.writeEnv ? `A new token for ${id} is in ${opts.writeEnv}.` : token);
    });

  agent.command('revoke <id>')
    .description('revoke every token of the agent, at once')
    .addHelpText('after', '\nExample:\n  $ baton agent revoke cheenu')
    .action(async (id: string, _opts, command: Command) => {
      const config = configOf(command);
      const revoked = await (await adminClient(config)).revokeAgent(id);
      emit(config, { id, revoked }, () => `Revoked ${revoked} token(s) of ${id}; they stop working now.`);
    });

  agent.command('list')
    .description('list every registered agent')
    .addHelpText('after', '\nExample:\n  $ baton agent list --json')
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const agents = await (await adminClient(config)).listAgents();
      emit(config, agents, (rows) => table(rows, [
        ['ID', (a) => a.id],
        ['NAME', (a) => a.display_name],
        ['CAPABILITIES', (a) => a.capabilities.join(',')],
        ['ACTIVE', (a) => (a.is_active ? 'yes' : 'no')],
        ['HEARTBEAT', (a) => ago(a.last_heartbeat)],
      ]));
    });

  agent.command('show <id>')
    .description('show one agent')
    .addHelpText('after', '\nExample:\n  $ baton agent show cheenu')
    .action(async (id: string, _opts, command: Command) => {
      const config = configOf(command);
      const found = await (await adminClient(config)).getAgent(id);
      emit(config, found, agentDetail);
    });
}
