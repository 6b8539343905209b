/** Bad input gets a clear, typed error, and nothing already stored is lost or changed. */
import { beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../src/errors.js';
import type { Task } from '../src/schemas.js';
import { admin, database, databaseNow, expectStampedBetween, newAgent, refusal, untyped, type TestAgent } from './helpers.js';

const db = database();

describe('bad input', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob');
  let existing: Task;
  let snapshot: unknown;

  async function stored() {
    const { rows } = await db.query(
      `select t.*, (select count(*) from task_events e where e.task_id = t.id) as events
       from task_handoffs t where t.from_agent = any($1) order by t.created_at`,
      [[alice.id, bob.id]],
    );
    return rows;
  }

  beforeAll(async () => {
    existing = await alice.client.handoff({ to: bob.id, title: 'keep me', payload: { n: 1 } });
    snapshot = await stored();
  });

  const cases: Array<[string, (a: TestAgent) => Promise<unknown>, string, RegExp]> = [
    ['an unknown addressee', (a) => a.client.handoff({ to: 'nobody-here', title: 'x' }), 'BT002', /no agent named "nobody-here"/],
    ['an unknown task', (a) => a.client.claim(crypto.randomUUID()), 'BT002', /no task/],
    ['a task id that is not a UUID', (a) => a.client.claim('42; drop table agents'), 'BT005', /UUID/],
    ['an empty title', (a) => a.client.handoff({ to: bob.id, title: '   ' }), 'BT005', /needs a title/],
    ['a title over 200 characters', (a) => a.client.handoff({ to: bob.id, title: 'x'.repeat(201) }), 'BT005', /limit is 200/],
    ['a payload over 256 KiB', (a) => a.client.handoff({ to: bob.id, title: 'big', payload: { blob: 'x'.repeat(270_000) } }), 'BT005', /256 KiB/],
    ['a payload that is not an object', (a) => a.client.handoff({ to: bob.id, title: 'x', payload: [1, 2] as never }), 'BT005', /payload/],
    ['an invalid priority', (a) => a.client.handoff({ to: bob.id, title: 'x', priority: 'asap' as never }), 'BT005', /priority/],
    ['an invalid capability', (a) => a.client.broadcast({ title: 'x', requiredCapabilities: ['Not A Slug'] }), 'BT005', /capabilities/],
    ['a deadline in the past', (a) => a.client.handoff({ to: bob.id, title: 'x', deadline: new Date(Date.now() - 1000) }), 'BT005', /already past/],
    ['too many attempts', (a) => a.client.handoff({ to: bob.id, title: 'x', maxAttempts: 0 }), 'BT005', /max_attempts/],
    ['a claim on a task that is not pending', async (a) => {
      const t = await a.client.handoff({ to: bob.id, title: 'short-lived' });
      await a.client.cancel(t.id);
      return bob.client.claim(t.id);
    }, 'BT001', /is cancelled; only pending tasks can be claimed/],
    ['completing a task that was only claimed', async (a) => {
      const t = await a.client.handoff({ to: bob.id, title: 'not started' });
      const claimed = await bob.client.claim(t.id);
      return bob.client.complete(t.id, claimed.claim_token!);
    }, 'BT001', /only a task in progress can be completed/],
    ['a rejection without a reason', async (a) => {
      const t = await a.client.handoff({ to: bob.id, title: 'reject me' });
      return bob.client.reject(t.id, '');
    }, 'BT005', /the reason for a rejection cannot be empty/],
    ['an invalid agent id', () => admin.createAgent({ id: 'Bad Id!' }), 'BT005', /invalid agent id/],
    ['a lease out of range', (a) => a.client.claimNext({ leaseSeconds: 1 }), 'BT005', /lease/],
  ];

  for (const [what, call, code, message] of cases) {
    it(`refuses ${what} with ${code}`, async () => {
      const err = await refusal(call(alice), code);
      expect(err.message).toMatch(message);
      expect(err.hint ?? '', 'every refusal says what to do').not.toBe('');
    });
  }

  it('maps codes to typed errors', async () => {
    await expect(alice.client.claim(crypto.randomUUID())).rejects.toBeInstanceOf(NotFoundError);
    await expect(alice.client.handoff({ to: bob.id, title: '' })).rejects.toBeInstanceOf(ValidationError);
  });

  it('refuses an option a call does not know, naming it, where dropping it would change the call', async () => {
    // `capabilities` for `requiredCapabilities`: dropped, the hand-off would go to every agent.
    const err = await alice.client.handoff({ title: 'for painters only', capabilities: ['paint'] } as never).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toBe('invalid input: no such field "capabilities"');
    // Nested too, and in the other calls' options; and nothing was handed off.
    await expect(alice.client.handoff({ to: bob.id, title: 'capped', budget: { token: 5 } } as never)).rejects.toThrow('budget: no such field "token"');
    await expect(alice.client.claimNext({ limt: 1 } as never)).rejects.toThrow('no such field "limt"');
    await expect(alice.client.send({ to: bob.id, body: 'hi', kindd: 'note' } as never)).rejects.toThrow('no such field "kindd"');
    const { rows } = await db.query('select id from public.task_handoffs where from_agent = $1 and title = any ($2)', [alice.id, ['for painters only', 'capped']]);
    expect(rows).toEqual([]);
  });

  it('stores injection-looking and unicode text verbatim', async () => {
    const title = `Robert'); drop table task_handoffs; -- 🦜 ünïcödé 漢字 \u202e`;
    const payload = { sql: "' or 1=1 --", html: '<script>alert(1)</script>', emoji: '🚀', nested: { quote: '"\\' } };
    const task = await alice.client.handoff({ to: bob.id, title, payload });
    const read = await bob.client.getTask(task.id);
    expect(read.title).toBe(title);
    expect(read.payload).toEqual(payload);
    expect((await bob.client.listTasks({ box: 'mine', limit: 500 })).map((t) => t.id)).toContain(existing.id);
  });

  it('refuses each task whose capabilities are not slugs in the database too, past the client', async () => {
    const slug = (n: number) => `cap-${n}`;
    const { data, error } = await untyped(alice.client.db).rpc('handoff_tasks', { p_tasks: [
      { title: 'not a slug', required_capabilities: ['ok', 'Not A Slug'] },
      { title: 'a null one', required_capabilities: [null] },
      { title: 'an empty one', required_capabilities: ['ok', ''] },
      { title: 'too many', required_capabilities: Array.from({ length: 33 }, (_, i) => slug(i)) },
      { title: 'fine', required_capabilities: ['ok', 'a.b:c-d_e'] },
      { title: 'as many as allowed', required_capabilities: Array.from({ length: 32 }, (_, i) => slug(i)) },
    ] });
    expect(error).toBeNull();
    const answers = data as Array<{ index: number; task_id: string | null; code: string | null; hint: string | null }>;
    expect(answers.map((a) => a.code)).toEqual(['BT005', 'BT005', 'BT005', 'BT005', null, null]);
    expect(answers[0]!.hint).toMatch(/lower-case letters/);
  });

  it('refuses each bad result in the database, past the client, and completes the good ones beside it', async () => {
    const deep = (levels: number): Record<string, unknown> => (levels === 0 ? {} : { a: deep(levels - 1) });
    const results: Array<[unknown, RegExp | null]> = [
      [{ status: 'success' }, null],
      [{ status: 'partial', summary: 'half', metrics: { n: 1 } }, null],
      [{ status: 'failed', summary: null, metrics: null }, null],
      [{ status: 'success', artifacts: [{ name: 'a.md', path: 'out/a.md' }, { name: 'b', url: 'https://x.test/b' }, { name: 'attached.md' }] }, null],
      [{ summary: 'no status' }, /result.status must be/],
      [{ status: 1 }, /result.status must be/],
      [{ status: 'done' }, /result.status must be/],
      [{ status: 'success', summary: 42 }, /result.summary must be a string/],
      [{ status: 'success', metrics: [1] }, /result.metrics must be an object/],
      [{ status: 'success', artifacts: {} }, /result.artifacts must be an array/],
      [{ status: 'success', artifacts: [{ name: 'attached.md' }, { path: 'out/a.md' }] }, /result.artifacts\[1\] needs a "name"/],
      [{ status: 'success', handoff: { title: 'next' } }, /result.handoff needs/],
      [{ status: 'success', metrics: deep(40) }, /the result nests deeper than 32 levels/],
      [{ status: 'success', summary: 'x'.repeat(270_000) }, /the result is \d+ bytes; the limit is 256 KiB/],
      [[{ status: 'success' }], /a result must be a JSON object/],
    ];
    const carol = await newAgent('carol', { maxConcurrent: 50 });
    const held: Task[] = [];
    for (const [i] of results.entries()) {
      const task = await alice.client.handoff({ to: carol.id, title: `result ${i}` });
      held.push(await carol.client.claim(task.id, { start: true }));
    }
    const { data, error } = await untyped(carol.client.db).rpc('report_outcomes', {
      p_outcomes: held.map((t, i) => ({ task_id: t.id, claim_token: t.claim_token, result: results[i]![0] })),
    });
    expect(error).toBeNull();
    const answers = data as Array<{ task_id: string; status: string | null; code: string | null; message: string | null; hint: string | null }>;
    expect(answers.map((a) => a.task_id)).toEqual(held.map((t) => t.id));
    for (const [i, [, refused]] of results.entries()) {
      const answer = answers[i]!;
      if (refused) {
        expect(answer.code, `result ${i}`).toBe('BT005');
        expect(answer.message, `result ${i}`).toMatch(refused);
        expect(answer.hint, `result ${i}`).not.toBeNull();
      } else {
        expect(answer.status, `result ${i}`).toBe('completed');
      }
    }
    const { rows } = await db.query('select id, status, result from task_handoffs where id = any($1)', [held.map((t) => t.id)]);
    for (const [i, [result, refused]] of results.entries()) {
      const row = rows.find((r) => r.id === held[i]!.id);
      expect(row, `result ${i}`).toMatchObject(refused ? { status: 'in_progress', result: null } : { status: 'completed', result });
    }
    // One task at a time too, through complete_task.
    const last = held.at(-2)!;
    const err = await refusal(carol.client.complete(last.id, last.claim_token!, { status: 'success', summary: 'x'.repeat(270_000) }), 'BT005');
    expect(err.message).toMatch(/256 KiB/);
  });

  it('stamps the messages agents write, and keeps result messages as sent', async () => {
    const dave = await newAgent('dave');
    const before = await databaseNow();
    const t = await alice.client.handoff({ to: dave.id, title: 'stamped' });
    const held = await dave.client.claim(t.id, { start: true });
    await dave.client.complete(t.id, held.claim_token!, { status: 'success', summary: 'ok' });
    const { rows: [result] } = await db.query(
      `select id, created_at, read_at, body from agent_messages where task_id = $1 and kind = 'result'`, [t.id]);
    expect(result).toMatchObject({ read_at: null, body: { status: 'completed', result: { status: 'success', summary: 'ok' } } });
    expectStampedBetween(result.created_at, before, await databaseNow());
    await expect(db.query(`update agent_messages set body = '{"status": "failed"}' where id = $1`, [result.id])).rejects.toThrow(/a sent message cannot change/);
    // A note an agent writes cannot carry its own time or read mark, and gets the time of its insert, unread.
    const forged = await untyped(dave.client.db).from('agent_messages').insert({
      from_agent: dave.id, to_agent: alice.id, kind: 'note', body: { text: 'hi' }, created_at: '2001-01-01T00:00:00Z',
    });
    expect(forged.error?.code).toBe('42501');
    const beforeNote = await databaseNow();
    const { data, error } = await untyped(dave.client.db).from('agent_messages').insert({
      from_agent: dave.id, to_agent: alice.id, kind: 'note', body: { text: 'hi' },
    }).select().single();
    const afterNote = await databaseNow();
    expect(error).toBeNull();
    expect(data).toMatchObject({ read_at: null, kind: 'note' });
    expectStampedBetween((data as { created_at: string }).created_at, beforeNote, afterNote);
    // An agent cannot write a result message itself.
    const result2 = await untyped(dave.client.db).from('agent_messages').insert({
      from_agent: dave.id, to_agent: alice.id, kind: 'result', body: { status: 'completed' },
    });
    expect(result2.error?.code).toBe('42501');
  });

  it('left every task stored before the bad input as it was', async () => {
    const after = (await stored()).filter((row) => (snapshot as Array<{ id: string }>).some((s) => s.id === row.id));
    expect(after).toEqual(snapshot);
  });
});
