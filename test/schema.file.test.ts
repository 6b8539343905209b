/**
 * supabase/schema.sql is the schema as the migrations leave it: a reader sees what runs today without
 * replaying history, and a change to the schema shows in review as a diff of that one file. A stack of
 * its own, freshly migrated, since other files add and drop objects on the shared one as they test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/stack/paths.js';
import { dumpSchema, schemaHeader } from '../src/stack/schema.js';
import { ownStack } from './own-stack.js';

const own = ownStack('schema-file');

/** Where two texts first part, with a few lines of each around it. */
function firstDifference(committed: string, migrated: string): string {
  const a = committed.split('\n');
  const b = migrated.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  const around = (lines: string[]) => lines.slice(Math.max(0, i - 3), i + 4).map((l, k) => `${Math.max(0, i - 3) + k + 1}: ${l}`).join('\n');
  return `line ${i + 1}\n--- supabase/schema.sql\n${around(a)}\n+++ the migrations today\n${around(b)}`;
}

describe('supabase/schema.sql', () => {
  it('is the schema a fresh migration makes (npm run types writes it)', async () => {
    const committed = fs.readFileSync(path.join(packageRoot, 'supabase', 'schema.sql'), 'utf8');
    const migrated = await dumpSchema(own.env.DATABASE_URL);
    expect(migrated.startsWith(schemaHeader)).toBe(true);
    // Every kind of object is there, so an empty section cannot pass for a match.
    for (const part of ['create table public.task_handoffs', 'create view public.task_queue', 'CREATE OR REPLACE FUNCTION public.claim_next_tasks',
      'CREATE TRIGGER step3_transition', 'create policy', 'function: public.handoff_task', 'comment on table public.task_handoffs', '(pending, claimed)']) {
      expect(migrated, part).toContain(part);
    }
    expect(committed === migrated, `supabase/schema.sql is out of date: run \`npm run types\` and commit it. First difference at ${firstDifference(committed, migrated)}`).toBe(true);
  });
});
