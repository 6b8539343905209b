/**
 * The status-transition trigger: every allowed change succeeds and every other is refused with BT001,
 * for every writer — here the database owner itself.
 */
import { describe, expect, it } from 'vitest';
import { TaskStatus } from '../src/schemas.js';
import { admin, database, newAgent } from './helpers.js';

const db = database();

const allowed = new Set([
  'pending>claimed', 'pending>in_progress', 'pending>rejected', 'pending>cancelled',
  // A chain whose budget is spent, with fail chosen, fails its pending work (docs/budgets.md).
  'pending>failed',
  'claimed>in_progress', 'claimed>pending', 'claimed>cancelled',
  'in_progress>completed', 'in_progress>failed', 'in_progress>pending', 'in_progress>input_required', 'in_progress>cancelled',
  'input_required>in_progress', 'input_required>cancelled',
  // The holder gives up while it waits for an answer (its budget spent, say): re-queued or failed.
  'input_required>pending', 'input_required>failed',
]);

// How to bring a fresh task to each status along allowed changes.
const pathTo: Record<TaskStatus, TaskStatus[]> = {
  pending: [],
  claimed: ['claimed'],
  in_progress: ['claimed', 'in_progress'],
  input_required: ['claimed', 'in_progress', 'input_required'],
  completed: ['claimed', 'in_progress', 'completed'],
  failed: ['claimed', 'in_progress', 'failed'],
  rejected: ['rejected'],
  cancelled: ['cancelled'],
};

describe('status transitions', async () => {
  const sender = await newAgent('tr-sender');
  const holder = await newAgent('tr-holder');

  async function taskIn(status: TaskStatus): Promise<string> {
    const { rows } = await db.query<{ id: string }>(
      `insert into task_handoffs (from_agent, to_agent, title) values ($1, $2, 'transition probe') returning id`,
      [sender.id, holder.id],
    );
    const id = rows[0]!.id;
    for (const step of pathTo[status]) await move(id, step);
    return id;
  }

  function move(id: string, to: TaskStatus) {
    const held = ['claimed', 'in_progress', 'input_required'].includes(to);
    return db.query(
      `update task_handoffs set status = $2, claimed_by = case when $3 then $4 else claimed_by end where id = $1`,
      [id, to, held, holder.id],
    );
  }

  for (const from of TaskStatus.options) {
    for (const to of TaskStatus.options) {
      if (from === to) continue;
      const ok = allowed.has(`${from}>${to}`);
      it(`${ok ? 'allows' : 'refuses'} ${from} → ${to}`, async () => {
        const id = await taskIn(from);
        if (ok) {
          await move(id, to);
          const { rows } = await db.query(`select status from task_handoffs where id = $1`, [id]);
          expect(rows[0].status).toBe(to);
        } else {
          await expect(move(id, to)).rejects.toMatchObject({ code: 'BT001', message: expect.stringContaining(`is ${from}; it cannot become ${to}`) });
          const { rows } = await db.query(`select status from task_handoffs where id = $1`, [id]);
          expect(rows[0].status).toBe(from);
        }
      });
    }
  }

  it('stamps the times and records every change in task_events', async () => {
    const id = await taskIn('completed');
    const { rows: [task] } = await db.query(`select * from task_handoffs where id = $1`, [id]);
    expect(task.claimed_at).not.toBeNull();
    expect(task.started_at).not.toBeNull();
    expect(task.completed_at).not.toBeNull();
    const { rows: events } = await db.query(`select from_status, to_status from task_events where task_id = $1 order by id`, [id]);
    expect(events).toEqual([
      { from_status: null, to_status: 'pending' },
      { from_status: 'pending', to_status: 'claimed' },
      { from_status: 'claimed', to_status: 'in_progress' },
      { from_status: 'in_progress', to_status: 'completed' },
    ]);
  });

  it('clears the claim when a task goes back to pending', async () => {
    const id = await taskIn('in_progress');
    await move(id, 'pending');
    const { rows: [task] } = await db.query(`select * from task_handoffs where id = $1`, [id]);
    expect(task).toMatchObject({ status: 'pending', claimed_by: null, claim_token: null, started_at: null });
  });

  it('holds for the service role writing through the API', async () => {
    const id = await taskIn('completed');
    const { error } = await admin.db.from('task_handoffs').update({ status: 'pending' }).eq('id', id);
    expect(error).toMatchObject({ code: 'BT001', hint: 'completed is final: nothing can change it.' });
    const reopened = await admin.db.from('task_handoffs').update({ status: 'claimed' }).eq('id', await taskIn('rejected'));
    expect(reopened.error?.code).toBe('BT001');
  });

  // The trigger checks a rule compiled from task_status_transitions; changing the table recompiles it.
  it('follows task_status_transitions when an operator changes it', async () => {
    const client = await db.connect();
    try {
      await client.query('begin');
      const task = async (steps: TaskStatus[]) => {
        const { rows } = await client.query<{ id: string }>(
          `insert into task_handoffs (from_agent, to_agent, title) values ($1, $2, 'rule probe') returning id`, [sender.id, holder.id]);
        for (const step of steps) {
          await client.query(`update task_handoffs set status = $2, claimed_by = coalesce(claimed_by, $3) where id = $1`, [rows[0]!.id, step, holder.id]);
        }
        return rows[0]!.id;
      };
      const failed = await task(['claimed', 'in_progress', 'failed']);
      const running = await task(['claimed', 'in_progress']);
      await client.query(`insert into task_status_transitions (from_status, to_status, meaning) values ('failed', 'pending', 'an operator re-opens failures')`);
      await client.query(`delete from task_status_transitions where from_status = 'in_progress' and to_status = 'completed'`);
      await client.query(`update task_handoffs set status = 'pending', claimed_by = null where id = $1`, [failed]);
      await client.query('savepoint refused');
      await expect(client.query(`update task_handoffs set status = 'completed' where id = $1`, [running]))
        .rejects.toMatchObject({ code: 'BT001', hint: 'From in_progress a task may become: pending, input_required, failed, cancelled.' });
      await client.query('rollback to savepoint refused');
      const { rows } = await client.query(`select status from task_handoffs where id = $1`, [failed]);
      expect(rows[0].status).toBe('pending');
      // With no transitions left, nothing may change.
      await client.query('delete from task_status_transitions');
      await expect(client.query(`update task_handoffs set status = 'cancelled' where id = $1`, [running]))
        .rejects.toMatchObject({ code: 'BT001', hint: 'in_progress is final: nothing can change it.' });
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
  });

  it('keeps task history append-only', async () => {
    const id = await taskIn('claimed');
    await expect(db.query(`update task_events set note = 'rewritten' where task_id = $1`, [id]))
      .rejects.toMatchObject({ code: 'BT003' });
  });

  it('starts every inserted task pending and unclaimed, whatever the writer sends', async () => {
    const { rows: [task] } = await db.query(
      `insert into task_handoffs (from_agent, to_agent, title, status, claimed_by, attempts)
       values ($1, $2, 'sneaky', 'completed', null, 7) returning *`,
      [sender.id, holder.id],
    );
    expect(task).toMatchObject({ status: 'pending', attempts: 0, depth: 0, root_task_id: task.id });
  });
});
