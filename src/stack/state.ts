/** What a stack keeps on disk: its secrets (made once) and, while it runs, where it listens. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { z } from 'zod';
import { generateSigningKey, mintRoleToken, SigningKey } from '../tokens.js';
import { stackPaths } from './paths.js';

/**
 * A stack holds both key systems, as a Supabase project in transition does: opaque publishable and
 * secret API keys with an ES256 signing key for tokens (the default), and the legacy JWT secret with its
 * anon and service-role keys, so that old scripts keep working.
 */
export const Secrets = z.object({
  publishableKey: z.string().startsWith('sb_publishable_'),
  secretKey: z.string().startsWith('sb_secret_'),
  signingKey: SigningKey,
  jwtSecret: z.string().min(32),
  anonKey: z.string(),
  serviceRoleKey: z.string(),
  dbPassword: z.string(),
  authenticatorPassword: z.string(),
  /**
   * The password of the cluster's superuser `supabase_admin`, which a cluster made by this version
   * has (its `postgres` is then hosted's non-superuser owner); absent for a cluster made earlier, whose
   * superuser is `postgres`.
   */
  adminPassword: z.string().optional(),
});
export type Secrets = z.infer<typeof Secrets>;

export const Runtime = z.object({
  pid: z.number().int(),
  apiPort: z.number().int(),
  dbPort: z.number().int(),
  postgrestPort: z.number().int(),
  postgrestPid: z.number().int().optional(),
  postgresPid: z.number().int().optional(),
  startedAt: z.string(),
});
export type Runtime = z.infer<typeof Runtime>;

const randomSecret = (bytes: number) => crypto.randomBytes(bytes).toString('base64url');

const newKeys = async () => ({
  publishableKey: `sb_publishable_${randomSecret(24)}`,
  secretKey: `sb_secret_${randomSecret(24)}`,
  signingKey: await generateSigningKey(),
});

/**
 * Reads the stack's secrets, generating them on first use. A stack made before the new key system
 * gets its publishable and secret keys and signing key now; its legacy keys stay as they were.
 */
export async function loadOrCreateSecrets(dir: string): Promise<Secrets> {
  const file = stackPaths(dir).secrets;
  if (fs.existsSync(file)) {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Secrets>;
    const parsed = Secrets.safeParse(stored);
    if (parsed.success) return parsed.data;
    const upgraded = Secrets.parse({ ...(await newKeys()), ...stored });
    writeSecrets(file, upgraded);
    return upgraded;
  }
  const jwtSecret = randomSecret(48);
  const secrets: Secrets = {
    ...(await newKeys()),
    jwtSecret,
    anonKey: await mintRoleToken({ jwtSecret }, 'anon'),
    serviceRoleKey: await mintRoleToken({ jwtSecret }, 'service_role'),
    dbPassword: randomSecret(24),
    authenticatorPassword: randomSecret(24),
    adminPassword: randomSecret(24),
  };
  fs.mkdirSync(dir, { recursive: true });
  writeSecrets(file, secrets);
  return secrets;
}

/**
 * The stack's secrets, or undefined if it has none yet, or only those of an older Baton that its next
 * start brings up to date (a starting stack does that before it says it runs).
 */
export function readSecrets(dir: string): Secrets | undefined {
  const file = stackPaths(dir).secrets;
  if (!fs.existsSync(file)) return undefined;
  const parsed = Secrets.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  return parsed.success ? parsed.data : undefined;
}

/** The secrets with a superuser password, for a cluster about to be made; stored before it is. */
export function withAdminPassword(dir: string, secrets: Secrets): Secrets {
  if (secrets.adminPassword) return secrets;
  const updated = { ...secrets, adminPassword: randomSecret(24) };
  writeSecrets(stackPaths(dir).secrets, updated);
  return updated;
}

/** Who the cluster's superuser is, and how to connect as it: the stack's own services do. */
export function superuserOf(secrets: Secrets, dbPort: number): { user: string; password: string; url: string } {
  const [user, password] = secrets.adminPassword ? ['supabase_admin', secrets.adminPassword] : ['postgres', secrets.dbPassword];
  return { user, password, url: `postgresql://${user}:${password}@127.0.0.1:${dbPort}/postgres` };
}

/** Replaces a file in one step, so that a reader meets the old text or the new, never half of one. */
function replaceFile(file: string, text: string, mode: number): void {
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, text, { mode });
  fs.chmodSync(temporary, mode);
  fs.renameSync(temporary, file);
}

/** Replaces the secrets file in one step, readable by its owner only. */
function writeSecrets(file: string, secrets: Secrets): void {
  replaceFile(file, JSON.stringify(secrets, null, 2) + '\n', 0o600);
}

/**
 * Says where the stack listens. In one step: `stack start` reads the file while the stack it started
 * writes it, and once read an empty file half written ("Unexpected end of JSON input").
 */
export function writeRuntime(dir: string, runtime: Runtime): void {
  replaceFile(stackPaths(dir).runtime, JSON.stringify(runtime, null, 2) + '\n', 0o644);
}

export function removeRuntime(dir: string): void {
  fs.rmSync(stackPaths(dir).runtime, { force: true });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A killed process that nobody reaped (its parent gone, PID 1 not an init) still answers signal 0.
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return true;
  }
}

/** What runtime.json says, alive or not. */
export function readRuntimeFile(dir: string): Runtime | undefined {
  const file = stackPaths(dir).runtime;
  if (!fs.existsSync(file)) return undefined;
  let text: unknown;
  try {
    text = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // Gone meanwhile, or written by a version that wrote it in place and is half way through.
    return undefined;
  }
  const runtime = Runtime.safeParse(text);
  return runtime.success ? runtime.data : undefined;
}

/** Where the stack in `dir` listens, if it is running; a leftover file from a crash is ignored. */
export function readRuntime(dir: string): Runtime | undefined {
  const runtime = readRuntimeFile(dir);
  return runtime && isAlive(runtime.pid) ? runtime : undefined;
}

export interface StackEnv {
  SUPABASE_URL: string;
  SUPABASE_PUBLISHABLE_KEY: string;
  SUPABASE_SECRET_KEY: string;
  /** The private ES256 JWK that signs agent tokens (one line of JSON). */
  BATON_SIGNING_KEY: string;
  SUPABASE_ANON_KEY: string;
  SUPABASE_SERVICE_ROLE_KEY: string;
  SUPABASE_JWT_SECRET: string;
  DATABASE_URL: string;
}

export function stackEnv(secrets: Secrets, apiPort: number, dbPort: number): StackEnv {
  return {
    SUPABASE_URL: `http://127.0.0.1:${apiPort}`,
    SUPABASE_PUBLISHABLE_KEY: secrets.publishableKey,
    SUPABASE_SECRET_KEY: secrets.secretKey,
    BATON_SIGNING_KEY: JSON.stringify(secrets.signingKey),
    SUPABASE_ANON_KEY: secrets.anonKey,
    SUPABASE_SERVICE_ROLE_KEY: secrets.serviceRoleKey,
    SUPABASE_JWT_SECRET: secrets.jwtSecret,
    DATABASE_URL: `postgresql://postgres:${secrets.dbPassword}@127.0.0.1:${dbPort}/postgres`,
  };
}
