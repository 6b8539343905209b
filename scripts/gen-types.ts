/**
 * Regenerates src/database.types.ts from the migrations: a throwaway embedded stack applies them, and
 * the Supabase CLI generates the types from it. Run after adding a migration; test/types.test.ts fails
 * until you do.
 *
 *   npm run types
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '../src/stack/index.js';
import { generateTypes } from '../src/stack/migrate.js';
import { packageRoot } from '../src/stack/paths.js';
import { freePort } from '../src/stack/ports.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-types-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
try {
  const file = path.join(packageRoot, 'src', 'database.types.ts');
  const types = await generateTypes(stack.env.DATABASE_URL);
  const changed = !fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== types;
  fs.writeFileSync(file, types);
  process.stdout.write(`${changed ? 'Wrote' : 'Unchanged:'} ${path.relative(process.cwd(), file)}\n`);
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
