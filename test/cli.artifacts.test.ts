/** The artifact commands of the built CLI: expected outputs, attaching on completion, reading, inputs, the chain. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Artifact, LineageRow, Task } from '../src/schemas.js';
import { cliAs, parsed } from './cli.js';
import { newAgent, stack } from './helpers.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-cli-artifacts-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string) => { const p = path.join(dir, name); fs.writeFileSync(p, content); return p; };

describe('baton artifact commands', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob', { maxConcurrent: 20 });
  const carol = await newAgent('carol');
  const asAlice = cliAs(alice.token, stack);
  const asBob = cliAs(bob.token, stack);
  const asCarol = cliAs(carol.token, stack);
  await asBob('status', 'here');

  it('hand off with expected outputs, refuse a bad one, attach on completion, and read them back', async () => {
    const schema = file('schema.json', JSON.stringify({ type: 'object', required: ['score'], properties: { score: { type: 'number' } } }));
    const task = Task.parse(parsed(await asAlice('handoff', bob.id, 'score it', '--expect', 'score.json=application/json',
      '--expect-optional', 'notes.md', '--output-schema', `score.json=@${schema}`, '--json')));
    expect(task.expected_outputs).toEqual([
      { name: 'score.json', media_type: 'application/json', required: true, json_schema: { type: 'object', required: ['score'], properties: { score: { type: 'number' } } } },
      { name: 'notes.md', required: false },
    ]);
    expect((await asAlice('handoff', bob.id, 'x', '--output-schema', `other.json=@${schema}`)).code).toBe(2);
    await asBob('claim', task.id);

    const missing = await asBob('complete', task.id, '--summary', 'no outputs');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/missing required outputs: score.json/);
    const bad = await asBob('complete', task.id, '--artifact', `score.json=${JSON.stringify({ score: 'high' })}`);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/does not match the schema .*\/score must be number/);

    const notes = file('notes.md', '# Notes\n');
    const done = Task.parse(parsed(await asBob('complete', task.id, '--summary', 'scored', '--artifact', 'score.json={"score": 9}', '--artifact', `notes.md=@${notes}`, '--json')));
    expect(done.status).toBe('completed');

    const listed = z.array(Artifact).parse(parsed(await asAlice('artifacts', task.id.slice(0, 8), '--json')));
    expect(listed.map((a) => [a.name, a.size_bytes, a.sha256])).toEqual([
      ['notes.md', 8, crypto.createHash('sha256').update('# Notes\n').digest('hex')],
      ['score.json', 12, crypto.createHash('sha256').update('{"score": 9}').digest('hex')],
    ]);
    expect((await asAlice('artifacts', task.id)).stdout).toMatch(/^NAME\s+TYPE\s+SIZE\s+SHA256\s+BY\s+WHERE$/m);
    expect((await asAlice('artifact', 'get', task.id, 'score.json')).stdout).toBe('{"score": 9}');
    const out = path.join(dir, 'copy.md');
    expect((await asAlice('artifact', 'get', task.id, 'notes.md', '-o', out)).stdout).toMatch(/^Wrote notes.md \(8 B, sha256 [0-9a-f]{64}\)/);
    expect(fs.readFileSync(out, 'utf8')).toBe('# Notes\n');
    expect(parsed(await asAlice('artifact', 'get', task.id, 'notes.md', '--json'))).toMatchObject({ name: 'notes.md', content: Buffer.from('# Notes\n').toString('base64'), encoding: 'base64' });
    expect((await asCarol('artifact', 'get', task.id, 'notes.md')).code).toBe(1);
    expect((await asAlice('artifact', 'get', task.id, 'nope.md')).code).toBe(1);

    const next = Task.parse(parsed(await asAlice('handoff', bob.id, 'use the score', '--input', `${task.id.slice(0, 8)}:score.json`, '--json')));
    expect(next.input_artifacts).toEqual([{ task_id: task.id, name: 'score.json' }]);
    expect((await asAlice('handoff', bob.id, 'bad input', '--input', 'no-colon')).code).toBe(2);
    expect((await asAlice('handoff', bob.id, 'bad input', '--input', `${task.id}:absent.json`)).code).toBe(1);
  });

  it('render the chain as a tree, or as lineage rows with --json', async () => {
    const root = Task.parse(parsed(await asAlice('handoff', bob.id, 'root job', '--json')));
    await asBob('claim', root.id);
    await asBob('complete', root.id, '--artifact', 'plan.md=the plan');
    const child = Task.parse(parsed(await asBob('handoff', carol.id, 'child job', '--parent', root.id.slice(0, 8), '--input', `${root.id}:plan.md`, '--allow-offline', '--json')));
    const rows = z.array(LineageRow).parse(parsed(await asCarol('chain', child.id, '--json')));
    expect(rows.map((r) => r.title)).toEqual(['root job', 'child job']);
    const tree = (await asCarol('chain', child.id.slice(0, 6))).stdout;
    expect(tree).toMatch(new RegExp(`^root job\\s+${root.id.slice(0, 8)}\\s+completed \\(success\\)\\s+by ${bob.id}`, 'm'));
    expect(tree).toMatch(/│  out plan.md \(8 B, sha256 [0-9a-f]{12}…\)/);
    expect(tree).toMatch(new RegExp(`└─ child job\\s+${child.id.slice(0, 8)}\\s+pending\\s+by ${carol.id}`));
    expect(tree).toMatch(new RegExp(`in  plan.md ← ${root.id.slice(0, 8)}`));
  });
});
