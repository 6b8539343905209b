/** What every command needs: the merged config and clients built from it. */
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { createAdminClient, type AdminClient } from '../client/admin.js';
import { createBatonClient, type BatonClient } from '../client/agent.js';
import { loadConfig, type BatonConfig } from '../config.js';
import { readRuntime, readSecrets, stackEnv } from '../stack/state.js';
import { usageError } from './exit.js';
import type { OutputOptions } from './output.js';

export const cliEntry = fileURLToPath(new URL('./index.js', import.meta.url));

export interface GlobalOptions extends OutputOptions {
  url?: string;
  dir?: string;
  apiPort?: string;
  dbPort?: string;
}

export function configOf(command: Command): BatonConfig & OutputOptions {
  const g = command.optsWithGlobals<GlobalOptions>();
  const config = loadConfig({
    url: g.url,
    stackDir: g.dir,
    apiPort: g.apiPort === undefined ? undefined : Number(g.apiPort),
    dbPort: g.dbPort === undefined ? undefined : Number(g.dbPort),
  });
  return { ...config, json: g.json };
}

interface Endpoint {
  url: string;
  anonKey?: string;
  serviceRoleKey?: string;
  jwtSecret?: string;
}

/** The project named by SUPABASE_URL and its keys, or else the local stack running in the stack folder. */
function endpoint(config: BatonConfig): Endpoint {
  if (config.url) return config as Endpoint;
  const runtime = readRuntime(config.stackDir);
  const secrets = readSecrets(config.stackDir);
  if (runtime && secrets) {
    const env = stackEnv(secrets, runtime.apiPort, runtime.dbPort);
    return {
      url: env.SUPABASE_URL,
      anonKey: config.anonKey ?? env.SUPABASE_ANON_KEY,
      serviceRoleKey: config.serviceRoleKey ?? env.SUPABASE_SERVICE_ROLE_KEY,
      jwtSecret: config.jwtSecret ?? env.SUPABASE_JWT_SECRET,
    };
  }
  throw usageError(
    'no Baton project to talk to: SUPABASE_URL is not set and no local stack is running',
    'Start one with `baton stack start`, or set SUPABASE_URL and its keys (env or .env).',
  );
}

/**
 * Where and as whom an agent acts. The API key is only the gateway's ticket: the agent's token decides
 * who acts, so the protocol's shared MC_SERVICE_KEY may stand in for a missing anon key.
 */
export function agentEndpoint(config: BatonConfig): { url: string; anonKey: string; token: string } {
  const { url, anonKey, serviceRoleKey } = endpoint(config);
  const apiKey = anonKey ?? serviceRoleKey;
  if (!apiKey) throw usageError('SUPABASE_ANON_KEY is not set', 'Set it to the project\'s anon key (baton stack env prints the local one).');
  if (!config.agentToken) {
    throw usageError('BATON_AGENT_TOKEN is not set', 'Set it to the token printed by `baton agent create <id>`.');
  }
  return { url, anonKey: apiKey, token: config.agentToken };
}

export function agentClient(config: BatonConfig): BatonClient {
  const client = createBatonClient(agentEndpoint(config));
  if (config.agentId && config.agentId !== client.agentId) {
    throw usageError(
      `AGENT_ID says "${config.agentId}", but BATON_AGENT_TOKEN is agent "${client.agentId}"'s token`,
      'Set BATON_AGENT_TOKEN to this agent\'s own token, or fix AGENT_ID (BATON_AGENT_ID): the token decides who acts.',
    );
  }
  return client;
}

/**
 * A read that also counts as the agent's heartbeat: reads run in read-only transactions, in which the
 * database cannot record one, so a beat goes along with it.
 */
export async function withBeat<T>(client: BatonClient, read: Promise<T>): Promise<T> {
  const [value] = await Promise.all([read, client.heartbeat()]);
  return value;
}

export function adminClient(config: BatonConfig): AdminClient {
  const { url, serviceRoleKey, jwtSecret } = endpoint(config);
  if (!serviceRoleKey) {
    throw usageError('SUPABASE_SERVICE_ROLE_KEY is not set', 'Operator commands need the service-role key (baton stack env prints the local one).');
  }
  return createAdminClient({ url, serviceRoleKey, jwtSecret });
}
