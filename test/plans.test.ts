/**
 * Plans that must not read an agent's finished history, and claims that must not read a whole queue.
 * bench:flat measures them at a million finished tasks; these check them on a smaller history, in
 * transactions that are rolled back. plans.stale.test.ts checks the reads that statistics seeing no
 * open task once misled, on a stack of its own.
 */
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { admin, database, stack, uniqueId } from './helpers.js';

const db = database();
const QUEUE = 3000;

/** A finished history loaded as bench:flat loads it, triggers off (the caller has them off). */
const loadFinished = (client: pg.PoolClient | pg.Client, sender: string, worker: string) => client.query(`
  insert into public.task_handoffs (id, from_agent, to_agent, title, status, claimed_by, attempts, created_at, completed_at, result, root_task_id)
  select id, $1, $2, 'finished ' || n, 'completed', $2, 1, now() - make_interval(secs => n), now() - make_interval(secs => n), '{"status": "success"}', id
  from (select gen_random_uuid() as id, n from generate_series(1, 20000) n) s`, [sender, worker]);

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/**
 * Tuples of task_handoffs one claim reads, in a transaction whose statistics were taken when nothing was
 * pending (as after ANALYZE on a quiet queue) and that then holds a queue of QUEUE tasks.
 */
async function tuplesReadByClaim(addressed: boolean): Promise<{ read: number; claimed: number }> {
  const sender = uniqueId('plan-sender');
  const worker = uniqueId('plan-worker');
  const capability = uniqueId('plan-cap');
  await admin.createAgent({ id: sender });
  await admin.createAgent({ id: worker, capabilities: [capability], maxConcurrent: 100 });
  // A session of its own, so that no plan made before these statistics is reused.
  const client = new pg.Client({ connectionString: stack.DATABASE_URL });
  await client.connect();
  try {
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    await loadFinished(client, sender, worker);
    await client.query('analyze public.task_handoffs');
    // The queue arrives after the statistics were taken.
    await client.query(`
      insert into public.task_handoffs (id, from_agent, to_agent, title, required_capabilities, created_at, root_task_id)
      select id, $1, $2, 'queued ' || n, $3, now() - make_interval(secs => ${QUEUE} - n), id
      from (select gen_random_uuid() as id, n from generate_series(1, ${QUEUE}) n) s`,
      [sender, addressed ? worker : null, addressed ? [] : [capability]]);
    await client.query('set local session_replication_role = origin');
    await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
      [JSON.stringify({ role: 'authenticated', agent_id: worker })]);
    const read = async () => (await client.query<{ n: string }>(`
      select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
      from pg_catalog.pg_stat_xact_user_tables where relid = 'public.task_handoffs'::regclass`)).rows[0]!.n;
    const before = Number(await read());
    const { rowCount } = await client.query('select * from public.claim_next_tasks(10, null, null, true)');
    return { read: Number(await read()) - before, claimed: rowCount ?? 0 };
  } finally {
    await client.query('rollback').catch(() => undefined);
    await client.end();
  }
}

describe('query plans', () => {
  it('lists an agent\'s open tasks under row-level security without reading its finished ones', async () => {
    const sender = uniqueId('plan-sender');
    const worker = uniqueId('plan-worker');
    await admin.createAgent({ id: sender });
    await admin.createAgent({ id: worker });
    const client = await db.connect();
    try {
      await client.query('begin');
      // The statistics see the finished history.
      await client.query('set local session_replication_role = replica');
      await loadFinished(client, sender, worker);
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

  // Statistics taken while the queue was empty say nothing is pending; a claim planned on them once
  // sorted every open task to take the first ten (O(queue) per claim, so a burst drained in O(queue²)).
  it('claims broadcasts from the front of their queue, whatever the statistics say', async () => {
    const { read, claimed } = await tuplesReadByClaim(false);
    expect(claimed).toBe(10);
    expect(read).toBeLessThan(QUEUE / 10);
  });

  it('claims tasks addressed to the agent from the front of its queue, whatever the statistics say', async () => {
    const { read, claimed } = await tuplesReadByClaim(true);
    expect(claimed).toBe(10);
    expect(read).toBeLessThan(QUEUE / 10);
  });

  it('reads the inbox, held tasks, reports, renewals and the sweep\'s searches from their own indexes', async () => {
    const sender = uniqueId('plan-sender');
    const worker = uniqueId('plan-worker');
    const capability = uniqueId('plan-cap');
    await admin.createAgent({ id: sender });
    await admin.createAgent({ id: worker, capabilities: [capability] });
    // The superuser: only it may load auto_explain.
    const client = new pg.Client({ connectionString: inject('adminUrl') });
    await client.connect();
    const plans: Array<{ 'Query Text': string; Plan: PlanNode & { 'Index Name'?: string } }> = [];
    client.on('notice', (notice) => {
      if (notice.message?.includes('"Plan"')) plans.push(JSON.parse(notice.message.slice(notice.message.indexOf('{'))));
    });
    try {
      await client.query('begin');
      await client.query(`insert into public.task_handoffs (id, from_agent, to_agent, title, root_task_id)
        select id, $1, $2, 'addressed', id from (select gen_random_uuid() as id) s`, [sender, worker]);
      await client.query(`insert into public.task_handoffs (id, from_agent, required_capabilities, title, root_task_id)
        select id, $1, $2, 'broadcast', id from (select gen_random_uuid() as id) s`, [sender, [capability]]);
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
        [JSON.stringify({ role: 'authenticated', agent_id: worker })]);
      await client.query('select * from public.claim_next_tasks(1, $1, null, true)', [[capability]]);
      await client.query("reset role");
      // Every statement's plan, those inside functions too, comes back as a notice.
      await client.query("load 'auto_explain'");
      await client.query("set local auto_explain.log_min_duration = 0");
      await client.query("set local auto_explain.log_nested_statements = on");
      await client.query("set local auto_explain.log_format = 'json'");
      await client.query("set local auto_explain.log_level = 'notice'");
      await client.query("set local role authenticated");
      const { rows } = await client.query('select title from public.my_tasks($1)', [['pending', 'claimed', 'in_progress', 'input_required']]);
      expect(rows.map((r) => r.title).sort()).toEqual(['addressed', 'broadcast']);
      const { rows: [held] } = await client.query('select id, claim_token from public.claim_next_tasks(1, null, null, true)');
      await client.query('select * from public.check_claims($1, $2, true)', [[held.id], [held.claim_token]]);
      const { rows: [report] } = await client.query('select * from public.report_outcomes($1)', [JSON.stringify([{ task_id: held.id, claim_token: held.claim_token }])]);
      expect(report.status).toBe('completed');
      await client.query('reset role');
      // The sweep's searches, as the sweep makes them.
      await client.query("select * from baton_private.lapsed_claims('claimed')");
      await client.query("select * from baton_private.lapsed_claims('in_progress')");
      await client.query('select * from baton_private.overdue_tasks()');
    } finally {
      await client.query('rollback').catch(() => undefined);
      await client.end();
    }
    const scansIn = (text: RegExp) => plans.filter((p) => text.test(p['Query Text']))
      .flatMap((p) => nodes(p.Plan) as Array<PlanNode & { 'Index Name'?: string }>)
      .filter((n) => n['Relation Name'] === 'task_handoffs' && n['Node Type'].endsWith('Scan'));
    // The inbox: the front of each of the two indexes, merged; never a bitmap scan.
    const inbox = scansIn(/union all/i);
    expect(inbox.map((n) => `${n['Node Type']} ${n['Index Name']}`).sort())
      .toEqual(['Index Scan task_handoffs_held_idx', 'Index Scan task_handoffs_open_to_agent_idx']);
    // The count behind the free slots of the claim: the agent's own held tasks, nothing else.
    const count = scansIn(/count\(\*\)/i);
    expect(count.length).toBeGreaterThan(0);
    expect(count.every((n) => n['Index Name'] === 'task_handoffs_held_idx')).toBe(true);
    // A renewal and a report (baton_private.complete_held) find the held tasks they name by primary key,
    // never through an index of every open task.
    for (const statement of [/set lease_expires_at = now\(\)/, /update public\.task_handoffs t\s+set status = 'completed'/]) {
      const scans = scansIn(statement);
      expect(scans.length, String(statement)).toBeGreaterThan(0);
      expect(scans.map((n) => n['Index Name']), String(statement)).toEqual(scans.map(() => 'task_handoffs_pkey'));
    }
    // The sweep reads the leases of held tasks and the deadlines of pending ones, each in its own index.
    for (const [statement, index] of [[/order by t\.lease_expires_at/, 'task_handoffs_leases_idx'], [/order by t\.deadline/, 'task_handoffs_deadlines_idx']] as const) {
      const scans = scansIn(statement);
      expect(scans.length, String(statement)).toBeGreaterThan(0);
      expect(scans.map((n) => n['Index Name']), String(statement)).toEqual(scans.map(() => index));
    }
  });
});
