/**
 * Codes and statuses from one source: Baton's error codes in src/errors.ts (`batonCodes`) against
 * every code the schema raises and docs/security.md's table; the final statuses in src/statuses.ts
 * against the transitions the database allows; and no copy of either typed again elsewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { batonCodes, httpStatusOf, refusalOf, type BatonCodeName } from '../src/errors.js';
import { finalStatuses, taskStatuses } from '../src/statuses.js';
import { admin } from './helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const sources = (dir: string): string[] => fs.readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
  .filter((e) => e.isFile() && /\.tsx?$/.test(e.name)).map((e) => path.relative(root, path.join(e.parentPath, e.name)));

describe('Baton\'s error codes', () => {
  it('are the codes the schema raises, each with the class, status and meaning docs/security.md gives', () => {
    const raised = new Set(read('supabase/schema.sql').match(/'BT\d{3}'/g)!.map((c) => c.slice(1, -1)));
    expect([...raised].sort()).toEqual(Object.keys(batonCodes).sort());
    const table = read('docs/security.md').split('\n').filter((l) => /^\| BT\d{3} \|/.test(l))
      .map((l) => l.split(' | ').map((cell) => cell.replace(/^\| |\s*\|$/g, '')));
    expect(table.map(([c]) => c)).toEqual(Object.keys(batonCodes));
    for (const [c, className, means] of table) {
      const known = batonCodes[c as BatonCodeName];
      expect([c, className, means]).toEqual([c, known.error.name, known.means]);
      const raisedHere = refusalOf(c as BatonCodeName, { message: 'm' });
      expect([c, raisedHere instanceof known.error, raisedHere.code, httpStatusOf(raisedHere)]).toEqual([c, true, c, known.http]);
    }
  });

  it('are raised in TypeScript only through the one list, so a code\'s class is always its own', () => {
    const minted = sources('src').flatMap((file) => [...read(file).matchAll(/new (\w+)\(\{\s*code: '(BT\d{3})'/g)].map((m) => `${file}: new ${m[1]} with ${m[2]}`));
    expect(minted).toEqual([]);
  });
});

describe('the task statuses', () => {
  it('end where the database allows no way on, and are spelled out only in src/statuses.ts', async () => {
    const { data, error } = await admin.db.from('task_status_transitions').select('from_status');
    expect(error).toBeNull();
    const leaving = new Set((data as Array<{ from_status: string }>).map((r) => r.from_status));
    expect(taskStatuses.filter((s) => !leaving.has(s))).toEqual([...finalStatuses]);
    // The four final statuses, or all eight, written out as a list anywhere else in TypeScript.
    const spelled = /'completed', 'failed', 'rejected', 'cancelled'/;
    const copies = [...sources('src'), ...sources('web')].filter((file) => file !== path.join('src', 'statuses.ts') && !file.endsWith('database.types.ts') && spelled.test(read(file)));
    expect(copies).toEqual([]);
  });
});
