import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { bootstrapDir, packageRoot } from './paths.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/**
 * The bootstrap SQL that a bare Postgres needs before Supabase migrations apply (see migrations/),
 * applied as the cluster's superuser; then the passwords of the roles the stack logs in as.
 */
export async function applyBootstrap(superuserUrl: string, passwords: { authenticator: string; postgres: string }): Promise<void> {
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    const files = fs.readdirSync(bootstrapDir).filter((f) => f.endsWith('.sql')).sort();
    for (const file of files) {
      await client.query(fs.readFileSync(path.join(bootstrapDir, file), 'utf8'));
    }
    // Only the local stack sets these passwords; a hosted project manages its own.
    await client.query(`alter role authenticator with login password ${client.escapeLiteral(passwords.authenticator)}`);
    await client.query(`alter role postgres with login password ${client.escapeLiteral(passwords.postgres)}`);
  } finally {
    await client.end();
  }
}

/**
 * What supautils does on hosted for `postgres`, which stock Postgres cannot: an event trigger that the
 * migrations could not make as a non-superuser is made by the superuser (supautils then hands it to
 * `postgres`; stock Postgres lets only a superuser own one). What it does and why: the foundation
 * migration, supabase/migrations/20261130000100_foundation.sql, which makes it where it may.
 */
export async function grantAsSupautils(superuserUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    await client.query(`
      do $$
      begin
        if not exists (select from pg_catalog.pg_event_trigger where evtname = 'baton_private_functions_are_private')
           and pg_catalog.to_regprocedure('baton_private.tg_revoke_public_execute()') is not null then
          create event trigger baton_private_functions_are_private on ddl_command_end
            when tag in ('CREATE FUNCTION', 'CREATE PROCEDURE')
            execute function baton_private.tg_revoke_public_execute();
        end if;
      end
      $$`);
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
