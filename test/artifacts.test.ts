/** Structured hand-offs: artifact RLS and hashes, expected outputs, schema refusals, inputs, follow-ups, lineage. */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IntegrityError, OutputSchemaError } from '../src/errors.js';
import { daemon, eventually } from './daemon-helpers.js';
import { database, newAgent, refusal, runningTask, stack } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

const db = database();
const schema = { type: 'object', required: ['items'], properties: { items: { type: 'array', minItems: 2, items: { type: 'string' } } } };

describe('artifacts', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob', { maxConcurrent: 50 });
  const carol = await newAgent('carol');

  it('are written only by the holder and read by whoever may see the task, with size and SHA-256', async () => {
    const task = await runningTask(alice, bob);
    const attached = await bob.client.attachArtifact(task.id, 'notes.md', '# Notes\nhello\n');
    expect(attached).toMatchObject({ name: 'notes.md', media_type: 'text/markdown', size_bytes: 14, producer: bob.id });
    expect(attached.sha256).toBe(crypto.createHash('sha256').update('# Notes\nhello\n').digest('hex'));
    const read = await alice.client.artifact(task.id, 'notes.md');
    expect(read.text()).toBe('# Notes\nhello\n');
    await refusal(alice.client.attachArtifact(task.id, 'forged.md', 'by the sender'), 'BT003');
    await refusal(carol.client.attachArtifact(task.id, 'forged.md', 'by a stranger'), 'BT002');
    await refusal(carol.client.artifact(task.id, 'notes.md'), 'BT002');
    expect(await carol.client.artifacts(task.id)).toEqual([]);
    const { error } = await bob.client.db.from('task_artifacts').insert({ task_id: task.id, name: 'direct.txt', content: '\\x00', producer: bob.id });
    expect(error?.code).toBe('42501');
  });

  it('replaces an artifact attached again under the same name, and keeps binary content intact', async () => {
    const task = await runningTask(alice, bob);
    const binary = Buffer.from([0, 1, 2, 250, 255, 0, 13, 10]);
    await bob.client.attachArtifact(task.id, 'blob.bin', 'first');
    await bob.client.attachArtifact(task.id, 'blob.bin', binary);
    const read = await alice.client.artifact(task.id, 'blob.bin');
    expect(read.content).toEqual(binary);
    expect(read.size_bytes).toBe(8);
    expect(await alice.client.artifacts(task.id)).toHaveLength(1);
  });

  it('detects content changed after it was attached', async () => {
    const task = await runningTask(alice, bob);
    await bob.client.attachArtifact(task.id, 'data.json', { json: { ok: true } });
    // As a superuser whose session fires no triggers (session_replication_role = replica): the trigger
    // that recomputes the hash stays on for every other session on the shared stack.
    const session = await db.connect();
    try {
      await session.query('begin');
      await session.query('set local session_replication_role = replica');
      await session.query(`update task_artifacts set content = convert_to('{"ok": false}', 'UTF8') where task_id = $1`, [task.id]);
      await session.query('commit');
    } finally {
      session.release();
    }
    const err = await alice.client.artifact(task.id, 'data.json').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IntegrityError);
    expect((err as IntegrityError).message).toMatch(/does not match its SHA-256/);
  });

  it('takes links for large outputs, and refuses inline content over 1 MiB', async () => {
    const task = await runningTask(alice, bob);
    const linked = await bob.client.attachArtifact(task.id, 'video.mp4', { uri: 'https://files.example/video.mp4', sizeBytes: 50_000_000, sha256: 'a'.repeat(64) });
    expect(linked).toMatchObject({ uri: 'https://files.example/video.mp4', size_bytes: 50_000_000 });
    expect((await alice.client.artifact(task.id, 'video.mp4')).content).toBeNull();
    const big = await refusal(bob.client.attachArtifact(task.id, 'big.bin', Buffer.alloc(1024 * 1024 + 1)), 'BT005');
    expect(big.message).toMatch(/limited to 1 MiB/);
    await refusal(bob.client.attachArtifact(task.id, '../etc/passwd', 'x'), 'BT005');
  });

  it('refuses a link that is code (javascript:, vbscript:, data:) and a media type with anything but parameters', async () => {
    const task = await runningTask(alice, bob);
    for (const uri of ['javascript://%0Aalert(document.domain)', 'vbscript://x', 'data://text/html,<script>1</script>']) {
      const refused = await refusal(bob.client.attachArtifact(task.id, 'link.html', { uri }), 'BT005');
      expect(refused.message).toMatch(/scheme/);
    }
    for (const mediaType of ['text/html;<script>alert(1)</script>', 'text/plain; charset=utf-8\r\nX-Injected: 1', 'text/plain;']) {
      await refusal(bob.client.attachArtifact(task.id, 'note.txt', 'hello', { mediaType }), 'BT005');
    }
    for (const mediaType of ['text/plain; charset=utf-8', 'text/plain;charset="utf-8"', 'application/vnd.api+json']) {
      expect((await bob.client.attachArtifact(task.id, 'fine.txt', 'hello', { mediaType })).media_type).toBe(mediaType);
    }
    expect((await bob.client.attachArtifact(task.id, 's3.bin', { uri: 's3://bucket/key.bin' })).uri).toBe('s3://bucket/key.bin');
    // Nothing refused was stored.
    expect((await alice.client.artifacts(task.id)).map((a) => a.name).sort()).toEqual(['fine.txt', 's3.bin']);
  });

  it('refuses completing without a required output, listing what is missing', async () => {
    const task = await alice.client.handoff({
      to: bob.id, title: 'produce two',
      expectedOutputs: [{ name: 'a.json', required: true }, { name: 'b.md', required: true }, { name: 'c.txt', required: false }],
    });
    const running = await bob.client.claim(task.id, { start: true });
    await bob.client.attachArtifact(task.id, 'b.md', 'half');
    const err = await refusal(bob.client.complete(task.id, running.claim_token), 'BT012');
    expect(err.message).toMatch(/missing required outputs: a.json$/);
    await bob.client.attachArtifact(task.id, 'a.json', { json: {} });
    expect((await bob.client.complete(task.id, running.claim_token)).status).toBe('completed');
  });

  it('refuses a JSON artifact that fails its schema, naming each problem, before it is stored', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'list', expectedOutputs: [{ name: 'list.json', json_schema: schema }] });
    await bob.client.claim(task.id, { start: true });
    const err = await bob.client.attachArtifact(task.id, 'list.json', { json: { items: [1] } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutputSchemaError);
    expect((err as OutputSchemaError).problems).toEqual([
      { path: '/items', message: 'must NOT have fewer than 2 items' },
      { path: '/items/0', message: 'must be string' },
    ]);
    expect(await bob.client.artifacts(task.id)).toEqual([]);
    expect((await bob.client.attachArtifact(task.id, 'list.json', { json: { items: ['a', 'b'] } })).name).toBe('list.json');
  });

  it('refuses over HTTP, as an agent\'s curl would, what the schema refuses: the database checks it, nothing is stored', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'list by curl', expectedOutputs: [{ name: 'list.json', json_schema: schema }] });
    await bob.client.claim(task.id, { start: true });
    // As docs/agents.md shows it: POST /rest/v1/rpc/attach_artifact with the content in hex.
    const attach = (json: unknown, mediaType = 'application/json') => fetch(`${stack.SUPABASE_URL}/rest/v1/rpc/attach_artifact`, {
      method: 'POST',
      headers: { apikey: Object.values(agentKeyEnv(stack)).find(Boolean)!, Authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ p_task_id: task.id, p_name: 'list.json', p_media_type: mediaType, p_content: `\\x${Buffer.from(JSON.stringify(json)).toString('hex')}` }),
    });
    const refused = await attach({ items: [1] });
    expect(refused.status).toBe(400);
    const body = await refused.json() as { code: string; message: string; details: string };
    expect(body.code).toBe('BT019');
    expect(JSON.parse(body.details)).toEqual([
      { path: '/items', message: 'must NOT have fewer than 2 items' },
      { path: '/items/0', message: 'must be string' },
    ]);
    expect((await attach({ items: ['a', 'b'] }, 'text/plain')).status).toBe(400);
    expect(await bob.client.artifacts(task.id)).toEqual([]);
    expect((await attach({ items: ['a', 'b'] })).status).toBe(200);
    expect((await bob.client.artifacts(task.id)).map((a) => a.name)).toEqual(['list.json']);
  });

  it('takes only schemas the database can check, and checks each keyword it takes as Ajv words it', async () => {
    const refused = await refusal(alice.client.handoff({ to: bob.id, title: 'refs', expectedOutputs: [{ name: 'a.json', json_schema: { $ref: '#/$defs/x', properties: { b: { patternProperties: {} } } } }] }), 'BT005');
    expect(refused.message).toMatch(/json_schema uses \$ref, patternProperties that the database does not check/);
    await refusal(alice.client.handoff({ to: bob.id, title: 'bad pattern', expectedOutputs: [{ name: 'a.json', json_schema: { properties: { b: { pattern: '((' } } } }] }), 'BT005');
    let deep: Record<string, unknown> = { type: 'array' };
    for (let i = 0; i < 40; i += 1) deep = { items: deep };
    await refusal(alice.client.handoff({ to: bob.id, title: 'too deep', expectedOutputs: [{ name: 'a.json', json_schema: deep }] }), 'BT005');
    const cases: Array<[Record<string, unknown>, unknown, Array<{ path: string; message: string }>]> = [
      [{ type: ['string', 'null'] }, 3, [{ path: '/', message: 'must be string,null' }]],
      [{ type: 'integer' }, 1.5, [{ path: '/', message: 'must be integer' }]],
      [{ enum: ['a', { b: 1 }] }, { b: 1, c: 2 }, [{ path: '/', message: 'must be equal to one of the allowed values' }]],
      [{ const: 'x' }, 'y', [{ path: '/', message: 'must be equal to constant' }]],
      [{ minimum: 1, exclusiveMaximum: 5, multipleOf: 2 }, 5, [{ path: '/', message: 'must be < 5' }, { path: '/', message: 'must be multiple of 2' }]],
      [{ minLength: 2, maxLength: 3, pattern: '^[a-z]+$' }, 'ABCD', [{ path: '/', message: 'must NOT have more than 3 characters' }, { path: '/', message: 'must match pattern "^[a-z]+$"' }]],
      [{ uniqueItems: true, maxItems: 2 }, [1, 1, 2], [{ path: '/', message: 'must NOT have more than 2 items' }, { path: '/', message: 'must NOT have duplicate items' }]],
      [{ required: ['a'], additionalProperties: { type: 'number' }, properties: { 'x/y': { type: 'string' } } }, { 'x/y': 1, z: 'no' },
        [{ path: '/', message: 'must have required property \'a\'' }, { path: '/x~1y', message: 'must be string' }, { path: '/z', message: 'must be number' }]],
      [{ anyOf: [{ type: 'string' }, { type: 'number' }], not: { const: 3 } }, 3, [{ path: '/', message: 'must NOT be valid' }]],
      [{ oneOf: [{ minimum: 1 }, { maximum: 10 }] }, 5, [{ path: '/', message: 'must match exactly one schema in oneOf' }]],
      [{ allOf: [{ type: 'object' }, { required: ['k'] }], title: 'annotations pass', description: 'unread' }, {}, [{ path: '/', message: 'must have required property \'k\'' }]],
      [{ type: 'object', properties: { n: { type: 'number' } } }, { n: 2 }, []],
    ];
    for (const [jsonSchema, value, problems] of cases) {
      const task = await alice.client.handoff({ to: bob.id, title: 'case', expectedOutputs: [{ name: 'v.json', json_schema: jsonSchema }] });
      await bob.client.claim(task.id, { start: true });
      const got = await bob.client.attachArtifact(task.id, 'v.json', { json: value }).then(() => [], (err: unknown) => (err as OutputSchemaError).problems);
      expect({ jsonSchema, value, problems: got }).toEqual({ jsonSchema, value, problems });
    }
  });

  it('refuses inputs the sender cannot see or that do not exist', async () => {
    const secret = await runningTask(carol, bob);
    await bob.client.attachArtifact(secret.id, 'secret.txt', 'classified');
    await refusal(alice.client.handoff({ to: bob.id, title: 'peek', inputArtifacts: [{ task_id: secret.id, name: 'secret.txt' }] }), 'BT002');
    const mine = await runningTask(alice, bob);
    await refusal(alice.client.handoff({ to: bob.id, title: 'nothing', inputArtifacts: [{ task_id: mine.id, name: 'missing.txt' }] }), 'BT002');
  });

  it('resolves inputs and the parent chain\'s artifacts for the next holder, hash-checked', async () => {
    const source = await runningTask(alice, bob);
    await bob.client.attachArtifact(source.id, 'data.csv', 'a,b\n1,2\n');
    await bob.client.complete(source.id, source.claim_token);
    const parent = await runningTask(alice, bob, 'parent');
    await bob.client.attachArtifact(parent.id, 'context.md', 'background');
    const child = await bob.client.handoff({ to: carol.id, title: 'child', parentTaskId: parent.id, inputArtifacts: [{ task_id: source.id, name: 'data.csv' }] });
    const inputs = await carol.client.inputs(child.id);
    expect(inputs.map((a) => [a.name, a.text()])).toEqual([['data.csv', 'a,b\n1,2\n'], ['context.md', 'background']]);
    await refusal(carol.client.artifact(source.id, 'data.csv'), 'BT002');
  });
});

describe('follow-ups requested by a result', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob', { maxConcurrent: 20 });
  const review = `review-${crypto.randomUUID().slice(0, 8)}`;
  const carol = await newAgent('carol', { capabilities: [review] });

  it('become a child of the completed task, in the same transaction, with its artifacts as inputs', async () => {
    const task = await runningTask(alice, bob);
    await bob.client.attachArtifact(task.id, 'draft.md', 'draft');
    await bob.client.complete(task.id, task.claim_token, {
      status: 'partial', summary: 'drafted',
      handoff: { capability: review, title: 'Review it', reason: 'second pair of eyes', context: { focus: 'tone' }, task_type: 'review', expected_outputs: [{ name: 'review.md' }] },
    });
    const [child] = await carol.client.listTasks({ box: 'pending' }).then((ts) => ts.filter((t) => t.parent_task_id === task.id));
    expect(child).toMatchObject({
      from_agent: bob.id, to_agent: null, required_capabilities: [review], title: 'Review it', description: 'second pair of eyes',
      payload: { task_type: 'review', context: { focus: 'tone' } }, expected_outputs: [{ name: 'review.md' }],
      input_artifacts: [{ task_id: task.id, name: 'draft.md' }], depth: 1, root_task_id: task.id,
    });
    expect((await carol.client.inputs(child!.id)).map((a) => a.text())).toEqual(['draft']);
  });

  it('are refused with the completion when they cannot be made, leaving the task running', async () => {
    const task = await runningTask(alice, bob);
    await refusal(bob.client.complete(task.id, task.claim_token, { status: 'success', handoff: { to_agent: 'nobody-here', title: 'x' } }), 'BT002');
    await refusal(bob.client.complete(task.id, task.claim_token, { status: 'success', handoff: { title: 'nowhere' } }), 'BT005');
    expect((await bob.client.getTask(task.id)).status).toBe('in_progress');

    let deep = await runningTask(alice, bob, 'level 0');
    for (let depth = 1; depth <= 5; depth++) {
      deep = await bob.client.claim((await bob.client.handoff({ to: bob.id, title: `level ${depth}`, parentTaskId: deep.id })).id, { start: true });
    }
    await refusal(bob.client.complete(deep.id, deep.claim_token, { status: 'success', handoff: { to_agent: alice.id, title: 'one more' } }), 'BT009');
    expect((await bob.client.getTask(deep.id)).status).toBe('in_progress');
  });
});

describe('structured hand-offs through daemons', () => {
  it('re-runs an executor whose output was refused with the problems in its context, then fails with them', async () => {
    const boss = await newAgent('boss');
    const fixer = await newAgent('fixer');
    const stubborn = await newAgent('stubborn');
    const seen: Array<Array<{ path: string; message: string }>> = [];
    await daemon(fixer, {
      executors: {
        '*': async (_task, ctx) => {
          seen.push(ctx.problems);
          await ctx.artifact('list.json', { json: { items: ctx.problems.length ? ['fixed', 'now'] : ['only one'] } });
          return 'listed';
        },
      },
    });
    const fixed = await boss.client.handoff({ to: fixer.id, title: 'list', expectedOutputs: [{ name: 'list.json', json_schema: schema }] });
    const done = await eventually(async () => { const t = await boss.client.getTask(fixed.id); return t.status === 'completed' && t; }, 20_000);
    expect(done.attempts).toBe(2);
    expect(seen).toEqual([[], [{ path: '/items', message: 'must NOT have fewer than 2 items' }]]);

    await daemon(stubborn, { executors: { '*': async () => 'forgot the output' } });
    const never = await boss.client.handoff({ to: stubborn.id, title: 'needs output', expectedOutputs: [{ name: 'out.txt' }], maxAttempts: 5 });
    const failed = await eventually(async () => { const t = await boss.client.getTask(never.id); return t.status === 'failed' && t; }, 20_000);
    expect(failed).toMatchObject({ attempts: 2, status_reason: expect.stringMatching(/^outputs refused: .*missing required outputs: out.txt/) });
    expect(failed.problems).toHaveLength(1);
  });

  it('creates the follow-up a result asks for, linked as a child with the producer\'s artifacts as inputs', async () => {
    const boss = await newAgent('boss');
    const writer = await newAgent('writer');
    const review = `review-${crypto.randomUUID().slice(0, 8)}`;
    const reviewer = await newAgent('reviewer', { capabilities: [review] });
    let reviewed = '';
    await daemon(writer, {
      executors: {
        '*': async (_task, ctx) => {
          await ctx.artifact('draft.md', '# Draft\n');
          return { status: 'partial', summary: 'drafted', handoff: { capability: review, title: 'Review the draft', reason: 'second opinion', context: { tone: 'formal' } } };
        },
      },
    });
    await daemon(reviewer, { capabilities: [review], executors: { [review]: (task, ctx) => { reviewed = `${ctx.input('draft.md')!.text()}|${JSON.stringify(task.payload.context)}`; return 'looks fine'; } } });
    const root = await boss.client.handoff({ to: writer.id, title: 'Write a draft' });
    await eventually(async () => reviewed !== '', 20_000, 'the review');
    expect(reviewed).toBe('# Draft\n|{"tone":"formal"}');
    const chain = await boss.client.chain(root.id);
    expect(chain.map((r) => [r.title, r.depth, r.producer])).toEqual([['Write a draft', 0, writer.id], ['Review the draft', 1, reviewer.id]]);
    expect(chain[1]).toMatchObject({ parent_task_id: root.id, inputs: [{ task_id: root.id, name: 'draft.md' }] });
  });

  it('shows the lineage of a three-level chain to anyone who may see one of its tasks', async () => {
    const a = await newAgent('a');
    const b = await newAgent('b', { maxConcurrent: 5 });
    const c = await newAgent('c');
    const root = await runningTask(a, b, 'level 0');
    await b.client.attachArtifact(root.id, 'plan.md', 'plan');
    const mid = await b.client.claim((await b.client.handoff({ to: b.id, title: 'level 1', parentTaskId: root.id })).id, { start: true });
    const leaf = await b.client.handoff({ to: c.id, title: 'level 2', parentTaskId: mid.id, inputArtifacts: [{ task_id: root.id, name: 'plan.md' }] });
    const fromLeaf = await c.client.chain(leaf.id);
    expect(fromLeaf.map((r) => [r.title, r.depth, r.status])).toEqual([['level 0', 0, 'in_progress'], ['level 1', 1, 'in_progress'], ['level 2', 2, 'pending']]);
    expect(fromLeaf[0]!.outputs).toMatchObject([{ name: 'plan.md', size_bytes: 4, producer: b.id }]);
    expect(fromLeaf[2]!.inputs).toEqual([{ task_id: root.id, name: 'plan.md' }]);
    expect((await a.client.chain(root.id)).map((r) => r.id)).toEqual(fromLeaf.map((r) => r.id));
    const stranger = await newAgent('stranger');
    await refusal(stranger.client.chain(root.id), 'BT002');
  });
});
