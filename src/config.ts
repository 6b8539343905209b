/**
 * The one reader of the environment and `.env`. Precedence: flags, then the process environment, then
 * the project's `.env` (or the file BATON_ENV_FILE names). The project is found as git finds a
 * repository: the working folder or the nearest one above it that holds Baton's `.baton/` folder or a
 * `.env` with Baton's settings in it. Everything else receives a BatonConfig as an argument.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import type { RuntimeHome } from './contract.js';

export const defaults = Object.freeze({
  apiPort: 54321,
  dbPort: 54322,
  stackDir: path.join('.baton', 'stack'),
  apiHost: '127.0.0.1',
  offlineAfterSeconds: 300,
});

export interface BatonConfig {
  /** The project's API URL, e.g. http://127.0.0.1:54321 or https://<ref>.supabase.co */
  url?: string;
  /** The project's API keys: publishable and secret (sb_…), or the legacy anon and service-role JWTs. */
  publishableKey?: string;
  secretKey?: string;
  anonKey?: string;
  serviceRoleKey?: string;
  /** The private ES256 JWK that signs agent tokens (JSON, or the path of a file holding it). */
  signingKey?: string;
  /** The legacy JWT secret, which signs agent tokens (HS256) where there is no signing key. */
  jwtSecret?: string;
  /** The acting agent's token (from `baton agent create`). */
  agentToken?: string;
  /** The agent the caller expects to act as (the protocol's AGENT_ID); checked against the token. */
  agentId?: string;
  databaseUrl?: string;
  /** Where the embedded stack keeps its data, secrets and logs. */
  stackDir: string;
  /** The address the local stack's API listens on: loopback, or 0.0.0.0 to serve other hosts (containers). */
  apiHost: string;
  apiPort: number;
  dbPort: number;
  /** The Realtime plan whose quotas the local stack keeps (free, pro, team, or numbers: src/stack/quotas.ts); Free's by default. */
  realtimePlan?: string;
}

/** Flags as given; a port may be the text typed, which is checked as the environment's is. */
export type ConfigFlags = Partial<Omit<BatonConfig, 'apiPort' | 'dbPort'>> & { apiPort?: number | string; dbPort?: number | string };

/** Where each setting is read from, first found wins; the MC_* names are the protocol's scripts'. */
const envNames = {
  url: ['SUPABASE_URL', 'MC_SUPABASE_URL'],
  publishableKey: ['SUPABASE_PUBLISHABLE_KEY'],
  secretKey: ['SUPABASE_SECRET_KEY'],
  anonKey: ['SUPABASE_ANON_KEY', 'MC_ANON_KEY'],
  serviceRoleKey: ['SUPABASE_SERVICE_ROLE_KEY', 'MC_SERVICE_KEY'],
  signingKey: ['BATON_SIGNING_KEY'],
  jwtSecret: ['SUPABASE_JWT_SECRET'],
  agentToken: ['BATON_AGENT_TOKEN', 'MC_AGENT_TOKEN'],
  agentId: ['BATON_AGENT_ID', 'AGENT_ID', 'MC_AGENT_ID'],
  databaseUrl: ['DATABASE_URL'],
  stackDir: ['BATON_STACK_DIR'],
  apiHost: ['BATON_API_HOST'],
  apiPort: ['BATON_API_PORT'],
  dbPort: ['BATON_DB_PORT'],
  realtimePlan: ['BATON_REALTIME_PLAN'],
} as const satisfies Record<keyof BatonConfig, readonly string[]>;

/** Every name the settings are read under: what makes a `.env` one of Baton's. */
const settingNames: readonly string[] = Object.values(envNames).flat();

/**
 * The folder of the Baton project that `cwd` is in: `cwd` itself or the nearest folder above it with
 * `.baton/` (a stack's home) or a `.env` that sets one of Baton's settings (a `.env` of some other
 * tool, in a home folder say, is passed by). None found: `cwd`, as before any project exists.
 */
export function projectRoot(cwd: string): string {
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, '.baton'))) return dir;
    const file = path.join(dir, '.env');
    if (fs.existsSync(file) && Object.keys(readEnvFile(file)).some((k) => settingNames.includes(k))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(cwd);
  }
}

/** A KEY=VALUE file, read as Node's own --env-file reads it (and dotenv, which agrees on what Baton writes). */
const readEnvFile = (file: string): Record<string, string> => parseEnv(fs.readFileSync(file, 'utf8')) as Record<string, string>;

/** The project's `.env`, or the file BATON_ENV_FILE names (which must then exist). */
function readDotenv(cwd: string, root: string, env: NodeJS.ProcessEnv): Record<string, string> {
  if (env.BATON_ENV_FILE) {
    const named = path.resolve(cwd, env.BATON_ENV_FILE);
    if (!fs.existsSync(named)) {
      throw new ConfigError(`BATON_ENV_FILE names ${named}, which does not exist; point it at a KEY=VALUE file (e.g. one written by baton agent create --write-env)`);
    }
    return readEnvFile(named);
  }
  const file = path.join(root, '.env');
  if (!fs.existsSync(file)) return {};
  return readEnvFile(file);
}

function port(value: string | number | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new ConfigError(`${name} must be a port number from 1 to 65535, got "${value}"`);
  }
  return n;
}

export class ConfigError extends Error {}

/**
 * Settings of the running process rather than of a Baton project: how much it logs (LOG_LEVEL, with a
 * default that depends on the command), whether it may colour its output (NO_COLOR), the trace a command
 * continues (TRACEPARENT and TRACESTATE, which a traced executor sets), the file named to hold the
 * settings (BATON_ENV_FILE), whether a port was asked for rather than defaulted (BATON_API_PORT,
 * BATON_DB_PORT), and the demo's pace (BATON_DEMO_STEP_MS).
 */
export const processSettings = Object.freeze({
  logLevel: (fallback: string): string => process.env.LOG_LEVEL || fallback,
  color: (): boolean => !process.env.NO_COLOR,
  parentTrace: (): { traceparent: string; tracestate: string | null } | undefined =>
    (process.env.TRACEPARENT ? { traceparent: process.env.TRACEPARENT, tracestate: process.env.TRACESTATE ?? null } : undefined),
  envFile: (): string | undefined => process.env.BATON_ENV_FILE || undefined,
  portAsked: (port: 'apiPort' | 'dbPort'): string | undefined => envNames[port].map((name) => process.env[name]).find(Boolean),
  demoStepMs: (): number => Number(process.env.BATON_DEMO_STEP_MS ?? 200),
});

/**
 * Where an agent runtime keeps its own folder, as the runtime declares it (src/runtimes): what its own
 * variable says, else its default (Baton installs its skill there and reads Gemini CLI's settings from
 * there). A leading `~` is the home folder.
 */
export function runtimeHome(home: RuntimeHome): string {
  const expand = (folder: string) => folder.replace(/^~(?=$|\/)/, os.homedir());
  const named = process.env[home.setting];
  return path.join(expand(named || home.fallback), home.within ?? '');
}

/** Whether the standard OpenTelemetry settings ask for traces (read without loading OpenTelemetry). */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER);
}

/**
 * Where traces go: to stderr as JSON (OTEL_TRACES_EXPORTER=console), or over OTLP/HTTP in the encoding
 * the settings ask for (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL):
 * http/protobuf unless they say otherwise, as the OpenTelemetry specification has it, or http/json.
 * gRPC is not sent: a setting that asks for it is refused with what to set instead.
 */
export function traceExport(env: NodeJS.ProcessEnv = process.env): 'console' | 'http/protobuf' | 'http/json' {
  if (env.OTEL_TRACES_EXPORTER === 'console') return 'console';
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (asked === 'http/protobuf' || asked === 'http/json') return asked;
  throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL is "${asked}", which Baton does not send: set http/protobuf (the default) or http/json, and point the endpoint at the collector's OTLP/HTTP port (4318)`);
}

/** BATON_SIGNING_KEY holds the JWK itself or names a file that does; the JWK text is returned. */
function readSigningKey(value: string | undefined, cwd: string): string | undefined {
  if (value === undefined || value.trimStart().startsWith('{')) return value;
  const file = path.resolve(cwd, value);
  if (!fs.existsSync(file)) {
    throw new ConfigError(`BATON_SIGNING_KEY is neither a JWK nor a file that exists: ${file}`);
  }
  return fs.readFileSync(file, 'utf8');
}

export function loadConfig(
  flags: ConfigFlags = {},
  { cwd = process.cwd(), env = process.env }: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): BatonConfig {
  const root = projectRoot(cwd);
  const fromFile = readDotenv(cwd, root, env);
  /** The setting, and the folder a relative path in it is relative to: the working folder, or the project's for its `.env`. */
  const located = (key: keyof BatonConfig): { value?: string; base: string } => {
    const flag = flags[key];
    if (flag !== undefined && flag !== '') return { value: String(flag), base: cwd };
    const names = envNames[key];
    const given = names.map((name) => env[name]).find(Boolean);
    if (given) return { value: given, base: cwd };
    return { value: names.map((name) => fromFile[name]).find(Boolean) || undefined, base: env.BATON_ENV_FILE ? cwd : root };
  };
  const pick = (key: keyof BatonConfig): string | undefined => located(key).value;
  const stackDir = located('stackDir');
  const signingKey = located('signingKey');
  return {
    url: pick('url')?.replace(/\/+$/, ''),
    publishableKey: pick('publishableKey'),
    secretKey: pick('secretKey'),
    anonKey: pick('anonKey'),
    serviceRoleKey: pick('serviceRoleKey'),
    signingKey: readSigningKey(signingKey.value, signingKey.base),
    jwtSecret: pick('jwtSecret'),
    agentToken: pick('agentToken'),
    agentId: pick('agentId'),
    databaseUrl: pick('databaseUrl'),
    stackDir: stackDir.value ? path.resolve(stackDir.base, stackDir.value) : path.resolve(root, defaults.stackDir),
    apiHost: pick('apiHost') ?? defaults.apiHost,
    realtimePlan: pick('realtimePlan'),
    ...ports(
      port(pick('apiPort'), 'the API port (--api-port, BATON_API_PORT)', defaults.apiPort),
      port(pick('dbPort'), 'the database port (--db-port, BATON_DB_PORT)', defaults.dbPort),
    ),
  };
}

/**
 * A variable that a setting names rather than one of Baton's own (an executor's `tokenEnv`): read the
 * same way, from the process environment, then the project's `.env`.
 */
export function namedVariable(name: string, { cwd = process.cwd(), env = process.env }: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string | undefined {
  return env[name] || readDotenv(cwd, projectRoot(cwd), env)[name] || undefined;
}

/**
 * The variables a program the daemon starts (a coding agent's CLI) is given from the daemon's own
 * environment: those `wanted` names (its provider's key and base URL, say) and the few any program
 * needs to run. Nothing else passes: the daemon's secret key and its other settings stay with it.
 */
export function passedEnvironment(wanted: RegExp, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const basics = /^(PATH|LANG|LC_[A-Z]+|TZ|TMPDIR|TERM|SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy)$/;
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && (basics.test(e[0]) || wanted.test(e[0]))));
}

/** The stack's two ports, which cannot be one. */
function ports(apiPort: number, dbPort: number): { apiPort: number; dbPort: number } {
  if (apiPort === dbPort) {
    throw new ConfigError(`the API port and the database port are both ${apiPort}; give them different ones (--api-port, --db-port)`);
  }
  return { apiPort, dbPort };
}

