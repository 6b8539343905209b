/**
 * `npm run demo`, end to end: the three-agent chain finishes, prints its lineage, and leaves nothing
 * running. On the oldest Node the engines admit (scripts/oldest-node.mjs); the suite runs on a newer one.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JS script
import { ensureOldestNode } from '../scripts/oldest-node.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsx = createRequire(import.meta.url).resolve('tsx/cli');
const oldestNode = path.join(ensureOldestNode({ log: () => undefined }) as string, 'node');

describe('the demo', () => {
  it('hands work from researcher to coder to auditor and back, with nobody in the middle, then stops everything', async () => {
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(oldestNode, [tsx, 'scripts/demo.ts'], { cwd: root, timeout: 120_000, env: { ...process.env, NO_COLOR: '1' } },
        (error, out, err) => resolve({ code: error ? Number(error.code) || 1 : 0, stdout: out + err }));
    });
    expect(code, stdout).toBe(0);
    const apiUrl = /API ready at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)![1]!;
    expect(stdout).toMatch(/auditor\s+completed\s+Audit the API comparison: 1 problem\(s\) found → audit.json/);
    expect(stdout).toMatch(/coder\s+completed\s+Fix: TaskPipe has no pricing: fixed: TaskPipe has no pricing/);
    expect(stdout).toMatch(/auditor\s+completed\s+Audit the API comparison: the comparison passes the audit/);
    expect(stdout).toMatch(/Lineage \(baton chain\):\nFind 3 competitors of Baton .* completed \(success\)\s+by researcher/);
    expect(stdout).toMatch(/└─ Audit the API comparison .* completed \(success\)\s+by auditor/);
    expect(stdout).toMatch(/competitors\.json\s+\d+ B\s+sha256 [0-9a-f]{64}\s+by researcher/);
    expect(stdout).toMatch(/Done in [\d.]+s: 5 tasks/);
    await expect(fetch(`${apiUrl}/health`)).rejects.toThrow();
    const leftovers = execFileSync('ps', ['-eo', 'args']).toString().split('\n').filter((line) => line.includes('baton-demo-'));
    expect(leftovers).toEqual([]);
  });
});
