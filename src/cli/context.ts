/** What every command needs: the merged config and clients built from it. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { AdminClient } from '../client/admin.js';
import type { BatonClient } from '../client/agent.js';
import { loadConfig, type BatonConfig } from '../config.js';
import { toBatonError } from '../errors.js';
import { ExitError, exitCodes, usageError } from './exit.js';
import type { OutputOptions } from './output.js';

export const cliEntry = fileURLToPath(new URL('./index.js', import.meta.url));

export interface GlobalOptions extends OutputOptions {
  url?: string;
  dir?: string;
  apiHost?: string;
  apiPort?: string;
  dbPort?: string;
}

export function configOf(command: Command): BatonConfig & OutputOptions {
  const g = command.optsWithGlobals<GlobalOptions>();
  const config = loadConfig({
    url: g.url,
    stackDir: g.dir,
    apiHost: g.apiHost,
    apiPort: g.apiPort,
    dbPort: g.dbPort,
  });
  return { ...config, json: g.json };
}

interface Endpoint {
  url: string;
  publishableKey?: string;
  secretKey?: string;
  anonKey?: string;
  serviceRoleKey?: string;
  signingKey?: string;
  jwtSecret?: string;
}

/**
 * The project named by SUPABASE_URL and its keys, or else the local stack running in the stack folder.
 * What a command needs beyond its options (the clients, the stack's files) is loaded when it runs, not
 * when the command tree is built: `baton --version` and `--help` load none of it.
 */
async function endpoint(config: BatonConfig): Promise<Endpoint> {
  if (config.url) return config as Endpoint;
  const { readRuntime, readSecrets, stackEnv } = await import('../stack/state.js');
  const runtime = readRuntime(config.stackDir);
  const secrets = readSecrets(config.stackDir);
  if (runtime && secrets) {
    const env = stackEnv(secrets, runtime.apiPort, runtime.dbPort);
    return {
      url: env.SUPABASE_URL,
      publishableKey: config.publishableKey ?? (config.anonKey ? undefined : env.SUPABASE_PUBLISHABLE_KEY),
      secretKey: config.secretKey ?? (config.serviceRoleKey ? undefined : env.SUPABASE_SECRET_KEY),
      anonKey: config.anonKey ?? env.SUPABASE_ANON_KEY,
      serviceRoleKey: config.serviceRoleKey ?? env.SUPABASE_SERVICE_ROLE_KEY,
      signingKey: config.signingKey ?? (config.jwtSecret ? undefined : env.BATON_SIGNING_KEY),
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
/** Where agents reach the project, and the API key they send: no token yet. */
export async function agentProject(config: BatonConfig): Promise<{ url: string; publishableKey?: string; anonKey?: string }> {
  const { url, publishableKey, anonKey, secretKey, serviceRoleKey } = await endpoint(config);
  const apiKey = publishableKey ?? anonKey ?? secretKey ?? serviceRoleKey;
  if (!apiKey) {
    throw usageError('SUPABASE_PUBLISHABLE_KEY is not set', 'Set it to the project\'s publishable key (or SUPABASE_ANON_KEY to its legacy anon key); baton stack env prints the local ones.');
  }
  return { url, ...(publishableKey ? { publishableKey } : { anonKey: apiKey }) };
}

export async function agentEndpoint(config: BatonConfig): Promise<{ url: string; publishableKey?: string; anonKey?: string; token: string }> {
  const project = await agentProject(config);
  if (!config.agentToken) {
    throw usageError('BATON_AGENT_TOKEN is not set', 'Set it to the token printed by `baton agent create <id>`.');
  }
  return { ...project, token: config.agentToken };
}

export async function agentClient(config: BatonConfig): Promise<BatonClient> {
  const { createBatonClient } = await import('../client/agent.js');
  const client = createBatonClient(await agentEndpoint(config));
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

/** The API key an agent's settings file carries: the publishable (or anon) key, never a secret one. */
async function agentApiKeyLine(config: BatonConfig): Promise<string> {
  const { publishableKey, anonKey } = await endpoint(config);
  if (publishableKey) return `SUPABASE_PUBLISHABLE_KEY=${publishableKey}`;
  if (anonKey) return `SUPABASE_ANON_KEY=${anonKey}`;
  throw usageError('the agent\'s settings need the project\'s publishable key, and none is set',
    'Set SUPABASE_PUBLISHABLE_KEY (or SUPABASE_ANON_KEY) as well; the secret key never goes into an agent\'s file.');
}

/**
 * Refuses, before anything is registered, a settings file that exists already (it may hold another
 * agent's token) or that could not carry an API key an agent may hold.
 */
export async function assertNewEnvFile(config: BatonConfig, file: string): Promise<void> {
  if (fs.existsSync(file)) {
    throw usageError(`${path.resolve(file)} exists already; it is left as it is`, 'Name a new file, or remove the old one first if its token is no longer wanted.');
  }
  await agentApiKeyLine(config);
}

/**
 * Writes what an agent needs to act (the project's URL and API key, its id and token) as a KEY=VALUE
 * file that only its owner may read; a daemon reads it as .env or through BATON_ENV_FILE.
 */
export async function writeAgentEnvFile(config: BatonConfig, file: string, agentId: string, token: string): Promise<void> {
  const lines = [`SUPABASE_URL=${(await endpoint(config)).url}`, await agentApiKeyLine(config), `BATON_AGENT_ID=${agentId}`, `BATON_AGENT_TOKEN=${token}`];
  writeSecretFile(file, `${lines.join('\n')}\n`);
}

/** Settings as KEY=VALUE lines; a value that is not one plain word (the signing key's JSON) single-quoted, for shells and dotenv alike. */
export const settingsLines = (settings: Record<string, string>): string =>
  `${Object.entries(settings).map(([k, v]) => `${k}=${/^[\w:/.@+=-]*$/.test(v) ? v : `'${v}'`}`).join('\n')}\n`;

/** Writes settings that hold secrets to a new file only its owner may read (0600); a file already there is left as it is. */
export function writeSecretFile(file: string, text: string): void {
  if (fs.existsSync(file)) {
    throw usageError(`${path.resolve(file)} exists already; it is left as it is`, 'Name a new file, or remove the old one first if what it holds is no longer wanted.');
  }
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // Created exclusively, so a file that appeared meanwhile is not overwritten either.
  fs.writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
}

/**
 * Whether the project's API answers, with the agent's token if there is one (which PostgREST then
 * verifies): a read of the API's root, which writes nothing and is no heartbeat.
 */
export async function checkApi(config: BatonConfig, onAnswer?: (res: Response) => void): Promise<{ url: string; asAgent: boolean }> {
  const { url, publishableKey, anonKey, secretKey, serviceRoleKey } = await endpoint(config);
  const apiKey = publishableKey ?? anonKey ?? secretKey ?? serviceRoleKey;
  if (!apiKey) throw usageError('no API key is set', 'Set SUPABASE_PUBLISHABLE_KEY (baton stack env prints the local one).');
  const headers: Record<string, string> = { apikey: apiKey, ...(config.agentToken ? { authorization: `Bearer ${config.agentToken}` } : {}) };
  let res: Response;
  try {
    res = await fetch(`${url}/rest/v1/`, { headers, signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new ExitError(`the API at ${url} does not answer: ${(err as Error).cause ?? (err as Error).message}`, exitCodes.refused, 'Check that the stack or project runs and that SUPABASE_URL points at it.');
  }
  onAnswer?.(res);
  if (!res.ok) {
    // The database's own refusal (a revoked or expired token, say) says what to do: it is reported as
    // every other command reports it; an answer that is not one is the API's or its gateway's.
    const body = await res.text().catch(() => '');
    let said: { code?: string; message?: string; hint?: string | null } = {};
    try {
      said = JSON.parse(body) as typeof said;
    } catch {
      // not JSON: a proxy's page, say
    }
    if (said.code && said.message) throw toBatonError({ code: said.code, message: said.message, hint: said.hint }, { status: res.status, url });
    throw new ExitError(`the API at ${url} answered ${res.status}: ${body.slice(0, 200)}`, exitCodes.refused,
      res.status === 401 ? 'The API key or the agent token is not this project\'s: check SUPABASE_PUBLISHABLE_KEY and BATON_AGENT_TOKEN.' : 'See the stack\'s log (baton stack status says where).');
  }
  await res.body?.cancel();
  return { url, asAgent: Boolean(config.agentToken) };
}

export async function adminClient(config: BatonConfig): Promise<AdminClient> {
  const { url, secretKey, serviceRoleKey, signingKey, jwtSecret } = await endpoint(config);
  const apiKey = secretKey ?? serviceRoleKey;
  if (!apiKey) {
    throw usageError('SUPABASE_SECRET_KEY is not set', 'Operator commands need the project\'s secret key (or SUPABASE_SERVICE_ROLE_KEY, its legacy service-role key); baton stack env prints the local ones.');
  }
  const [{ createAdminClient }, { parseSigningKey }] = await Promise.all([import('../client/admin.js'), import('../tokens.js')]);
  let key;
  try {
    key = signingKey ? parseSigningKey(signingKey, 'BATON_SIGNING_KEY') : undefined;
  } catch (err) {
    throw usageError((err as Error).message, 'Set BATON_SIGNING_KEY to the private JWK you imported into the project, or unset it to sign with SUPABASE_JWT_SECRET.');
  }
  return createAdminClient({ url, secretKey: apiKey, signingKey: key, jwtSecret });
}
