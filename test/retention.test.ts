/**
 * Retention on a stack of its own (it deletes finished work, which other files on the shared stack still
 * read): the sweep deletes whole finished chains past baton_settings.keep_finished, with their events,
 * messages and artifacts, and never an open task or anything an open task still needs.
 */
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import type { TestAgent } from './helpers.js';
import { ownStack } from './own-stack.js';

const own = ownStack('retention');
let pool: pg.Pool | undefined;
afterAll(() => pool?.end());

async function done(worker: TestAgent, id: string, summary = 'done'): Promise<void> {
  const held = await worker.client.claim(id, { start: true });
  await worker.client.complete(id, held.claim_token!, { status: 'success', summary });
}

it('deletes only finished chains past keep_finished that nothing open needs, in bounded batches', async () => {
  pool = new pg.Pool({ connectionString: own.env.DATABASE_URL, max: 2 });
  const lead = await own.newAgent('keep-lead');
  const worker = await own.newAgent('keep-worker', { maxConcurrent: 20 });

  // An old finished chain: P and its child Q, with an artifact and the messages of their work.
  const p = await lead.client.handoff({ to: worker.id, title: 'P' });
  const heldP = await worker.client.claim(p.id, { start: true });
  const q = await worker.client.handoff({ to: worker.id, title: 'Q', parentTaskId: p.id });
  await worker.client.progress(p.id, 'halfway');
  await done(worker, q.id);
  await worker.client.attachArtifact(p.id, 'p.txt', 'the output');
  await worker.client.complete(p.id, heldP.claim_token!, { status: 'success', summary: 'done', artifacts: [{ name: 'p.txt' }] });
  // Old and finished, but an open task depends on it.
  const r = await lead.client.handoff({ to: worker.id, title: 'R' });
  await done(worker, r.id);
  const s = await lead.client.handoff({ to: worker.id, title: 'S, open, after R', dependsOn: [r.id] });
  // Old and finished, but its chain is still open.
  const u = await lead.client.handoff({ to: worker.id, title: 'U' });
  const heldU = await worker.client.claim(u.id, { start: true });
  const v = await worker.client.handoff({ to: worker.id, title: 'V, open, child of U', parentTaskId: u.id });
  await worker.client.complete(u.id, heldU.claim_token!, { status: 'success' });
  // Old and failed, retried by a task that is still open.
  const x = await lead.client.handoff({ to: worker.id, title: 'X', maxAttempts: 1 });
  const heldX = await worker.client.claim(x.id, { start: true });
  await worker.client.fail(x.id, heldX.claim_token!, 'broke');
  const y = await lead.client.retry(x.id);
  // Finished just now.
  const w = await lead.client.handoff({ to: worker.id, title: 'W' });
  await done(worker, w.id);
  // Direct messages, one old and one new.
  const oldNote = await lead.client.send({ to: worker.id, body: { text: 'old news' } });
  const newNote = await lead.client.send({ to: worker.id, body: { text: 'fresh news' } });

  // The chains that must stay are the oldest, so they come first: they must not hold back P's.
  await pool.query("update task_handoffs set completed_at = now() - interval '3 hours' where id = any ($1)", [[r.id, u.id, x.id]]);
  await pool.query("update task_handoffs set completed_at = now() - interval '2 hours' where id = any ($1)", [[p.id, q.id]]);
  // A sent message never changes (a trigger says so); only a superuser with triggers off can age one.
  await pool.query(`begin; set local session_replication_role = replica;
    update agent_messages set created_at = now() - interval '2 hours' where id = '${oldNote.id}'; commit;`);

  // Off by default: nothing is deleted.
  expect((await own.admin.sweep()).retention_deleted).toBe(0);
  await pool.query("update baton_settings set keep_finished = interval '1 hour', retention_batch = 1");

  // A batch of 1 still takes one whole chain (P and Q together), never half of one.
  const first = await own.admin.sweep();
  expect(first.retention_deleted).toBe(2);
  expect((await own.admin.sweep()).retention_deleted).toBe(0);

  const left = (await pool.query('select title from task_handoffs where from_agent = $1 or from_agent = $2 order by title', [lead.id, worker.id])).rows.map((row) => row.title);
  expect(left).toEqual(['R', 'S, open, after R', 'U', 'V, open, child of U', 'W', 'X', 'X'].sort());
  expect(left).not.toContain('P');
  for (const table of ['task_events', 'task_artifacts', 'agent_messages']) {
    const { rows } = await pool.query(`select count(*)::int as n from ${table} where task_id = any ($1)`, [[p.id, q.id]]);
    expect(rows[0].n, table).toBe(0);
  }
  const { rows: notes } = await pool.query('select id from agent_messages where id = any ($1)', [[oldNote.id, newNote.id]]);
  expect(notes.map((n) => n.id)).toEqual([newNote.id]);
  expect(await lead.client.getTask(s.id)).toMatchObject({ status: 'pending', depends_on: [r.id] });
  expect(await worker.client.getTask(v.id)).toMatchObject({ status: 'pending' });
  expect(await lead.client.getTask(y.id)).toMatchObject({ retry_of: x.id });

  // Once S, V and Y are done, their chains may go too (when they are old enough).
  await done(worker, s.id);
  await done(worker, v.id);
  await done(worker, y.id);
  await pool.query("update task_handoffs set completed_at = now() - interval '2 hours' where from_agent = any ($1)", [[lead.id, worker.id]]);
  await pool.query('update baton_settings set retention_batch = 500');
  expect((await own.admin.sweep()).retention_deleted).toBe(7);
  await pool.query('update baton_settings set keep_finished = null');
});
