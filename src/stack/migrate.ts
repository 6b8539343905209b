import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { bootstrapDir, packageRoot } from './paths.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** The bootstrap SQL that a bare Postgres needs before Supabase migrations apply (see migrations/). */
export async function applyBootstrap(databaseUrl: string, authenticatorPassword: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const files = fs.readdirSync(bootstrapDir).filter((f) => f.endsWith('.sql')).sort();
    for (const file of files) {
      await client.query(fs.readFileSync(path.join(bootstrapDir, file), 'utf8'));
    }
    // Only the local stack sets this password; a hosted project manages its own.
    await client.query(`alter role authenticator with login password ${client.escapeLiteral(authenticatorPassword)}`);
  } finally {
    await client.end();
  }
}

const supabaseCli = () => require.resolve('supabase/dist/supabase.js');

/** The first line of src/database.types.ts, which says where the rest comes from. */
export const typesHeader = '// Generated from the migrated schema by `npm run types` (supabase gen types --lang typescript); do not edit.\n';

/**
 * The TypeScript types of the public schema as the Supabase CLI generates them, from the database at
 * `databaseUrl` (migrated). Only the CLI's standard output is kept: its notices go to standard error.
 */
export async function generateTypes(databaseUrl: string): Promise<string> {
  try {
    const { stdout } = await run(
      process.execPath,
      [supabaseCli(), 'gen', 'types', '--lang', 'typescript', '--schema', 'public', `--remote=${databaseUrl}`, '--workdir', packageRoot],
      { env: { ...process.env, PGSSLMODE: 'disable' }, maxBuffer: 16 * 1024 * 1024 },
    );
    return typesHeader + stdout;
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`supabase gen types failed:\n${stdout}${stderr}`.trim(), { cause: err });
  }
}

/** Applies supabase/migrations with the real Supabase CLI, exactly as for a hosted project. */
export async function pushMigrations(databaseUrl: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [supabaseCli(), 'db', 'push', `--remote=${databaseUrl}`, '--yes', '--workdir', packageRoot],
      { env: { ...process.env, PGSSLMODE: 'disable', SUPABASE_YES: '1' }, maxBuffer: 16 * 1024 * 1024 },
    );
    return stdout + stderr;
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`supabase db push failed:\n${stdout}${stderr}`.trim(), { cause: err });
  }
}
