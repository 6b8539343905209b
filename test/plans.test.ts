/**
 * Plans that must not read an agent's finished history. bench:flat measures them at a million finished
 * tasks; this checks the plan's shape on a smaller history, in a transaction that is rolled back.
 */
import { describe, expect, it } from 'vitest';
import { admin, database, uniqueId } from './helpers.js';

const db = database();

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

describe('query plans', () => {
  it('lists an agent\'s open tasks under row-level security without reading its finished ones', async () => {
    const sender = uniqueId('plan-sender');
    const worker = uniqueId('plan-worker');
    await admin.createAgent({ id: sender });
    await admin.createAgent({ id: worker });
    const client = await db.connect();
    try {
      await client.query('begin');
      // A finished history loaded as bench:flat loads it, triggers off; the statistics see it.
      await client.query('set local session_replication_role = replica');
      await client.query(`
        insert into public.task_handoffs (id, from_agent, to_agent, title, status, claimed_by, attempts, created_at, completed_at, result, root_task_id)
        select id, $1, $2, 'finished ' || n, 'completed', $2, 1, now() - make_interval(secs => n), now() - make_interval(secs => n), '{"status": "success"}', id
        from (select gen_random_uuid() as id, n from generate_series(1, 20000) n) s`, [sender, worker]);
      await client.query('set local session_replication_role = origin');
      await client.query('analyze public.task_handoffs');
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
        [JSON.stringify({ role: 'authenticated', agent_id: worker })]);
      // What `baton tasks` asks for (listTasks({ box: 'mine', status: open })), as PostgREST sends it.
      const { rows } = await client.query(`explain (format json)
        select * from public.task_handoffs
        where (to_agent = $1 or claimed_by = $1) and status = any ('{pending,claimed,in_progress,input_required}')
        order by priority desc, created_at limit 50`, [worker]);
      const scans = nodes(rows[0]['QUERY PLAN'][0].Plan as PlanNode).filter((n) => n['Relation Name'] === 'task_handoffs');
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
  });
});
