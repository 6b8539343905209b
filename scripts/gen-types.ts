/**
 * Regenerates what is derived from the migrations: src/database.types.ts (the Supabase CLI generates
 * the types) and supabase/schema.sql (the live schema, from the catalogue), from a throwaway embedded
 * stack that applies them. Run after adding a migration; test/types.test.ts and
 * test/schema.file.test.ts fail until you do.
 *
 *   npm run types
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '../src/stack/index.js';
import { generateTypes } from '../src/stack/migrate.js';
import { dumpSchema } from '../src/stack/schema.js';
import { packageRoot } from '../src/stack/paths.js';
import { freePort } from '../src/stack/ports.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-types-'));
fs.chmodSync(dir, 0o755);
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
try {
  const write = (file: string, text: string) => {
    const changed = !fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text;
    fs.writeFileSync(file, text);
    process.stdout.write(`${changed ? 'Wrote' : 'Unchanged:'} ${path.relative(process.cwd(), file)}\n`);
  };
  write(path.join(packageRoot, 'src', 'database.types.ts'), await generateTypes(stack.env.DATABASE_URL));
  write(path.join(packageRoot, 'supabase', 'schema.sql'), await dumpSchema(stack.env.DATABASE_URL));
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
