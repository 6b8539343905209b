/** Who may see and do what with tasks, with three agents and a superuser check of what is stored. */
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { database, databaseNow, expectStampedBetween, newAgent, refusal, runningTask } from './helpers.js';

const db = database();

describe('task visibility and rights', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob', { capabilities: ['code', 'review'] });
  const carol = await newAgent('carol', { capabilities: ['code'] });

  it('records the sender from the token, not from anything the caller says', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'who sent me' });
    expect(task.from_agent).toBe(alice.id);
  });

  it('refuses creating a task directly, even as oneself', async () => {
    const { error } = await alice.client.db.from('task_handoffs')
      .insert({ from_agent: alice.id, to_agent: bob.id, title: 'forged' });
    expect(error?.code).toBe('42501');
    const { error: spoofed } = await alice.client.db.from('task_handoffs')
      .insert({ from_agent: carol.id, to_agent: bob.id, title: 'spoofed' });
    expect(spoofed?.code).toBe('42501');
  });

  it('shows a direct task to its sender and addressee only', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'for bob' });
    expect((await alice.client.getTask(task.id)).id).toBe(task.id);
    expect((await bob.client.getTask(task.id)).id).toBe(task.id);
    await refusal(carol.client.getTask(task.id), 'BT002');
    const carolsTasks = await carol.client.listTasks({ box: 'all' });
    expect(carolsTasks.map((t) => t.id)).not.toContain(task.id);
  });

  it('shows a broadcast to agents holding all its required capabilities', async () => {
    const task = await alice.client.broadcast({ title: 'review this', requiredCapabilities: ['code', 'review'] });
    expect((await bob.client.getTask(task.id)).id).toBe(task.id);
    await refusal(carol.client.getTask(task.id), 'BT002');
    await refusal(carol.client.claim(task.id), 'BT002');
  });

  it('lets only the addressee claim or reject a direct task', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'only bob' });
    await refusal(carol.client.claim(task.id), 'BT002');
    await refusal(carol.client.reject(task.id, 'not mine'), 'BT002');
    await refusal(alice.client.claim(task.id), 'BT003');
    await refusal(alice.client.reject(task.id, 'sender cannot'), 'BT003');
    const rejected = await bob.client.reject(task.id, 'too busy');
    expect(rejected).toMatchObject({ status: 'rejected', status_reason: 'too busy' });
  });

  it('lets only the holder, with its claim token, complete or fail', async () => {
    const task = await runningTask(alice, bob);
    await refusal(carol.client.complete(task.id, task.claim_token!, { status: 'success', summary: 'not mine' }), 'BT002');
    await refusal(alice.client.complete(task.id, task.claim_token!, { status: 'success', summary: 'sender' }), 'BT003');
    await refusal(alice.client.fail(task.id, task.claim_token!, 'sender'), 'BT003');
    await refusal(bob.client.complete(task.id, crypto.randomUUID()), 'BT007');
    const done = await bob.client.complete(task.id, task.claim_token!, { status: 'success', summary: 'done' });
    expect(done).toMatchObject({ status: 'completed', result: { status: 'success', summary: 'done' } });
  });

  it('lets only the sender cancel, and only before the task is final', async () => {
    const task = await runningTask(alice, bob);
    await refusal(bob.client.cancel(task.id), 'BT003');
    await refusal(carol.client.cancel(task.id), 'BT002');
    expect((await alice.client.cancel(task.id, 'plans changed')).status).toBe('cancelled');
    await refusal(alice.client.cancel(task.id), 'BT001');
  });

  it('refuses a direct UPDATE of status or claimed_by by an agent', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'hands off my status' });
    for (const [who, change] of [
      [bob, { status: 'completed' }], [bob, { claimed_by: bob.id }], [alice, { status: 'cancelled' }],
    ] as const) {
      const { error } = await who.client.db.from('task_handoffs').update(change).eq('id', task.id);
      expect(error?.code).toBe('42501');
    }
    const { rows } = await db.query('select status, claimed_by from task_handoffs where id = $1', [task.id]);
    expect(rows[0]).toEqual({ status: 'pending', claimed_by: null });
  });

  it('shows history only with the task', async () => {
    const task = await runningTask(alice, bob);
    expect((await alice.client.events(task.id)).map((e) => e.to_status)).toEqual(['pending', 'in_progress']);
    expect((await alice.client.events(task.id))[1]!.actor).toBe(bob.id);
    expect(await carol.client.events(task.id)).toEqual([]);
  });
});

describe('agents', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob');

  it('lets an agent change its own row and nobody else\'s', async () => {
    const me = await alice.client.updateProfile({ displayName: 'Alice', capabilities: ['writing'] });
    expect(me).toMatchObject({ display_name: 'Alice', capabilities: ['writing'] });
    const { data } = await alice.client.db.from('agents').update({ display_name: 'Pwned' }).eq('id', bob.id).select();
    expect(data).toEqual([]);
    expect((await alice.client.agent(bob.id)).display_name).toBeNull();
  });

  it('keeps an agent from forging the time of its own heartbeat', async () => {
    const before = await databaseNow();
    const { data, error } = await alice.client.db.from('agents').update({ last_heartbeat: '2099-01-01T00:00:00Z' }).eq('id', alice.id).select('last_heartbeat').single();
    expect(error).toBeNull();
    expectStampedBetween(data!.last_heartbeat!, before, await databaseNow());
    const other = await alice.client.db.from('agents').update({ last_heartbeat: '2099-01-01T00:00:00Z' }).eq('id', bob.id).select('id');
    expect(other.data).toEqual([]);
    const beforeBeat = await databaseNow();
    const beat = await alice.client.heartbeat('working');
    expectStampedBetween(beat.last_heartbeat!, beforeBeat, await databaseNow());
    expect(beat).toMatchObject({ is_active: true, status_message: 'working' });
  });

  it('notes that an agent was heard from on any request that writes, when a beat is due', async () => {
    const carol = await newAgent('carol');
    const beat = async () => (await db.query<{ last_heartbeat: Date; is_active: boolean }>(
      'select last_heartbeat, is_active from agents where id = $1', [carol.id])).rows[0]!;
    const longAgo = new Date('2020-01-01T00:00:00Z');
    await db.query('update agents set last_heartbeat = $2, is_active = false where id = $1', [carol.id, longAgo]);
    // A read runs read-only: it notes nothing.
    await carol.client.listTasks();
    expect(await beat()).toEqual({ last_heartbeat: longAgo, is_active: false });
    // A write that is no heartbeat still says the agent is alive.
    const before = await databaseNow();
    await carol.client.handoff({ to: carol.id, title: 'note to self' });
    const noted = await beat();
    expect(noted.is_active).toBe(true);
    expectStampedBetween(noted.last_heartbeat, before, await databaseNow());
    // Heard from within the last second (here: stamped ahead of the clock), no beat is due: nothing is written.
    const ahead = new Date(Date.now() + 3_600_000);
    await db.query('update agents set last_heartbeat = $2 where id = $1', [carol.id, ahead]);
    await carol.client.handoff({ to: carol.id, title: 'another note' });
    expect(await beat()).toEqual({ last_heartbeat: ahead, is_active: true });
  });

  it('writes the beat as the request commits, so a refused request never updates its agent\'s row', async () => {
    // Postgres can fail an update of a row, with a key-share lock on it, while another update of it is
    // rolling back ("new multixact has more than one updating member", a 500): see docs/security.md.
    const dave = await newAgent('dave');
    const { jti } = decodeJwt(dave.token);
    const beat = async () => (await db.query<{ last_heartbeat: Date; is_active: boolean }>(
      'select last_heartbeat, is_active from agents where id = $1', [dave.id])).rows[0]!;
    const longAgo = new Date('2020-01-01T00:00:00Z');
    await db.query('update agents set last_heartbeat = $2, is_active = false where id = $1', [dave.id, longAgo]);
    const client = await db.connect();
    /** A request's transaction as PostgREST runs it, up to its request check; then what the row holds. */
    const checked = async () => {
      await client.query('begin');
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true),
                                 set_config('request.method', 'POST', true), set_config('request.path', '/rpc/claim_task', true)`,
        [JSON.stringify({ role: 'authenticated', agent_id: dave.id, jti })]);
      await client.query('select baton_private.check_request()');
      return (await client.query<{ last_heartbeat: Date; is_active: boolean }>(
        'select last_heartbeat, is_active from agents where id = $1', [dave.id])).rows[0]!;
    };
    try {
      // While the request runs, and when it is refused, the agent's row is untouched.
      expect(await checked()).toEqual({ last_heartbeat: longAgo, is_active: false });
      await client.query('rollback');
      expect(await beat()).toEqual({ last_heartbeat: longAgo, is_active: false });
      // As it commits, the beat is written.
      const before = await databaseNow();
      await checked();
      await client.query('commit');
      const noted = await beat();
      expect(noted.is_active).toBe(true);
      expectStampedBetween(noted.last_heartbeat, before, await databaseNow());
      expect((await db.query('select count(*)::int as n from baton_private.pending_beats where agent_id = $1', [dave.id])).rows[0].n).toBe(0);
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
    // Over HTTP: a refused request notes nothing; the next one that goes through does.
    await db.query('update agents set last_heartbeat = $2, is_active = false where id = $1', [dave.id, longAgo]);
    await refusal(dave.client.claim('00000000-0000-4000-8000-000000000000'), 'BT002');
    expect(await beat()).toEqual({ last_heartbeat: longAgo, is_active: false });
    await dave.client.handoff({ to: dave.id, title: 'note to self' });
    expect((await beat()).is_active).toBe(true);
  });

  it('lets only an operator register agents', async () => {
    const { error } = await alice.client.db.from('agents').insert({ id: 'self-made' });
    expect(error?.code).toBe('42501');
    const { error: rpc } = await alice.client.db.rpc('register_agent', { p_id: 'self-made' });
    expect(rpc?.code).toBe('42501');
  });
});

describe('messages', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob');
  const carol = await newAgent('carol');

  it('delivers direct messages to sender and recipient only, and broadcasts to everyone', async () => {
    const direct = await alice.client.send({ to: bob.id, body: { text: 'psst' } });
    const everyone = await alice.client.send({ body: { text: 'hello all' } });
    expect((await bob.client.messages()).map((m) => m.id)).toEqual(expect.arrayContaining([direct.id, everyone.id]));
    const carolSees = (await carol.client.messages({ limit: 1000 })).map((m) => m.id);
    expect(carolSees).toContain(everyone.id);
    expect(carolSees).not.toContain(direct.id);
  });

  it('sends only as oneself', async () => {
    const { error } = await alice.client.db.from('agent_messages').insert({ from_agent: carol.id, to_agent: bob.id, body: { text: 'spoof' } });
    expect(error?.code).toBe('42501');
  });

  it('threads messages only on tasks the sender can see', async () => {
    const task = await alice.client.handoff({ to: bob.id, title: 'thread' });
    await bob.client.send({ to: alice.id, taskId: task.id, body: { text: 'which format?' } });
    const { error } = await carol.client.db.from('agent_messages').insert({ from_agent: carol.id, task_id: task.id, body: { text: 'intrude' } });
    expect(error?.code).toBe('42501');
    expect((await alice.client.messages({ taskId: task.id })).map((m) => m.kind)).toEqual(['note']);
  });

  it('lets only the recipient mark a message read, and never rewrite it', async () => {
    const message = await alice.client.send({ to: bob.id, body: { text: 'read me' } });
    expect(await carol.client.markRead([message.id])).toEqual([]);
    const [read] = await bob.client.markRead([message.id]);
    expect(read!.read_at).not.toBeNull();
    const { error } = await bob.client.db.from('agent_messages').update({ body: { text: 'rewritten' } }).eq('id', message.id);
    expect(error?.code).toBe('42501');
  });
});
