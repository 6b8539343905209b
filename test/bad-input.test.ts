/** Bad input gets a clear, typed error, and nothing already stored is lost or changed. */
import { beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../src/errors.js';
import type { Task } from '../src/schemas.js';
import { admin, database, newAgent, refusal, untyped, type TestAgent } from './helpers.js';

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

  it('left every task stored before the bad input as it was', async () => {
    const after = (await stored()).filter((row) => (snapshot as Array<{ id: string }>).some((s) => s.id === row.id));
    expect(after).toEqual(snapshot);
  });
});
