/**
 * src/database.types.ts is what the Supabase CLI generates from the migrations, and the zod schemas
 * agree with it. A migration that changes a column without `npm run types` fails the first test; a zod
 * schema that drifts from the database fails the second.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { generateTypes, typesHeader } from '../src/stack/migrate.js';
import { packageRoot } from '../src/stack/paths.js';
import { stack } from './helpers.js';

const run = promisify(execFile);

describe('generated types', () => {
  it('are what the Supabase CLI generates from the migrated schema today', async () => {
    const committed = fs.readFileSync(path.join(packageRoot, 'src', 'database.types.ts'), 'utf8');
    const generated = await generateTypes(stack.DATABASE_URL);
    expect(generated.startsWith(typesHeader)).toBe(true);
    // Only the CLI's output: none of its notices (TLS, formatting hints) may land in the file.
    expect(generated).not.toMatch(/Connecting to|Target:|unformatted|WARN|TLS/i);
    expect(generated.includes('"task_handoffs"') && generated.includes('"claim_next_tasks"')).toBe(true);
    expect(committed === generated, 'src/database.types.ts is out of date: run `npm run types` and commit it').toBe(true);
  });

  it('agree with the zod schemas, column by column (test/types.agree.ts compiles)', async () => {
    const tsc = path.join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', path.join(packageRoot, 'test')], { cwd: packageRoot })
      .then(() => ({ code: 0, out: '' }), (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }));
    expect(result.out).toBe('');
    expect(result.code).toBe(0);
  }, 120_000);
});
