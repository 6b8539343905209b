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

/** Applies supabase/migrations with the real Supabase CLI, exactly as for a hosted project. */
export async function pushMigrations(databaseUrl: string): Promise<string> {
  const cli = require.resolve('supabase/dist/supabase.js');
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [cli, 'db', 'push', `--remote=${databaseUrl}`, '--yes', '--workdir', packageRoot],
      { env: { ...process.env, PGSSLMODE: 'disable', SUPABASE_YES: '1' }, maxBuffer: 16 * 1024 * 1024 },
    );
    return stdout + stderr;
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`supabase db push failed:\n${stdout}${stderr}`.trim(), { cause: err });
  }
}
