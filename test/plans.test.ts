/**
 * Claims whose plans cannot go wrong with the statistics. Autovacuum analyzes task_handoffs whenever it
 * gets to it, often with the queue nearly empty; with such statistics every index of open tasks looks as
 * cheap as a queue's own, and a claim once read every open task of every sender through
 * task_handoffs_open_from_agent_idx. The file has a stack of its own: it drops an index, in a
 * transaction it rolls back, to show which other index a claim could fall back on.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ownStack } from './own-stack.js';
import { uniqueId } from './helpers.js';

const own = ownStack('plans');

/** Entries read through an index in this transaction so far. */
async function entriesRead(client: pg.PoolClient, index: string): Promise<number> {
  const { rows } = await client.query('select pg_stat_get_xact_tuples_returned($1::regclass) as read', [`public.${index}`]);
  return Number(rows[0].read);
}

describe('query plans', () => {
  it('never claims broadcasts through the index of every sender\'s open tasks', async () => {
    const capability = uniqueId('plan-cap');
    const sender = await own.newAgent('plan-sender');
    const worker = await own.newAgent('plan-worker', { capabilities: [capability], maxConcurrent: 1000 });
    const made = await sender.client.handoffMany(
      Array.from({ length: 300 }, (_, i) => ({ title: `plan ${i}`, requiredCapabilities: [capability] })));
    expect(made.filter((a) => a.code !== null)).toEqual([]);

    const pool = new pg.Pool({ connectionString: own.env.DATABASE_URL, max: 1 });
    const client = await pool.connect();
    try {
      await client.query('begin');
      // Without the queue's own index, the claim must not find another that holds only open tasks.
      await client.query('drop index public.task_handoffs_claimable_capability_idx');
      // A table this small would be read whole; what is asked is which index could serve instead.
      await client.query('set local enable_seqscan = off');
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
        [JSON.stringify({ role: 'authenticated', agent_id: worker.id })]);
      const before = await entriesRead(client, 'task_handoffs_open_from_agent_idx');
      // More claims than PL/pgSQL's five custom plans, so its cached plan is used too.
      for (let i = 0; i < 7; i++) {
        const { rows } = await client.query('select id from public.claim_next_tasks(10, null, null, true)');
        expect(rows).toHaveLength(10);
      }
      expect(await entriesRead(client, 'task_handoffs_open_from_agent_idx')).toBe(before);
      // The open-task quota's recount, which names the sender, still reads it.
      await client.query('reset role');
      await client.query(`select count(*) from public.task_handoffs t
                          where t.from_agent = $1 and t.status in ('pending', 'claimed', 'in_progress', 'input_required')`, [sender.id]);
      expect(await entriesRead(client, 'task_handoffs_open_from_agent_idx')).toBeGreaterThan(before);
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
      await pool.end();
    }
  });
});
