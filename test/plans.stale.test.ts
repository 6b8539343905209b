/**
 * Statistics that see no open task: what a table whose history dwarfs its queue gets from ANALYZE, and
 * what a backlog that came after it does not change. On a stack of its own (the shared one always holds
 * some other test's open tasks, so its statistics never say none), a worker claims, renews and reports
 * ten tasks and the sweep runs, behind a backlog of tasks the worker cannot take; none of them may read
 * that backlog. With such statistics each of them once read every open task.
 */
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../src/stack/index.js';
import { freePort } from '../src/stack/ports.js';
import { makeStackDir } from './global-setup.js';

const BACKLOG = 3000;
const HISTORY = 30_000;

describe('with statistics that see no open task', () => {
  let dir: string;
  let stack: Stack;
  let db: pg.Client;

  beforeAll(async () => {
    dir = makeStackDir('baton-stale-');
    const apiPort = await freePort();
    stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]), realtimePlan: 'unlimited' });
    db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    await db.query('update public.baton_settings set handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000');
    await db.query(`insert into public.agents (id) values ('sender')`);
    await db.query(`insert into public.agents (id, capabilities, max_concurrent) values ('worker', '{work}', 100), ('fworker', '{work}', 100), ('other', '{other}', 100)`);
    // A finished history, a tenth of it the worker's and most of it another's (the shape of the stack
    // where these plans were found), loaded with triggers off; then the statistics.
    await db.query('set session_replication_role = replica');
    await db.query(`
      insert into public.task_handoffs (id, from_agent, title, required_capabilities, status, claimed_by, attempts, created_at, completed_at, result, root_task_id)
      select id, 'sender', 'finished ' || n, '{work}', (case when n % 10 < 3 then 'cancelled' when n % 10 < 6 then 'failed' else 'completed' end)::public.task_status,
             case when n % 10 < 3 then null when n % 10 < 4 then 'worker' else 'fworker' end, 1, now() - make_interval(secs => n), now() - make_interval(secs => n),
             '{"status": "success"}', id
      from (select gen_random_uuid() as id, n from generate_series(1, ${HISTORY}) n) s`);
    await db.query('set session_replication_role = origin');
    await db.query('vacuum analyze public.task_handoffs');
    // From here on the statistics stay as they are, as they do on a large table until a tenth of it changed.
    await db.query('alter table public.task_handoffs set (autovacuum_analyze_threshold = 2000000000)');
    const asSender = `select set_config('request.jwt.claims', '{"role": "authenticated", "agent_id": "sender"}', false), set_config('role', 'authenticated', false)`;
    await db.query(asSender);
    for (let i = 0; i < BACKLOG; i += 1000) {
      await db.query('select count(*) from public.handoff_tasks($1)',
        [JSON.stringify(Array.from({ length: 1000 }, (_, j) => ({ title: `backlog ${i + j}`, required_capabilities: ['other'] })))]);
    }
    await db.query('select count(*) from public.handoff_tasks($1)',
      [JSON.stringify(Array.from({ length: 10 }, (_, j) => ({ title: `work ${j}`, required_capabilities: ['work'], deadline: new Date(Date.now() + 3_600_000).toISOString() })))]);
    await db.query('reset role');
  });

  afterAll(async () => {
    await db?.end();
    await stack?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('claims, renews, reports and sweeps without reading a backlog the worker cannot take', async () => {
    const { rows: [seen] } = await db.query(`select count(*)::int as n from pg_catalog.pg_stats
      where schemaname = 'public' and tablename = 'task_handoffs' and attname = 'status' and 'pending' = any (most_common_vals::text::text[])`);
    expect(seen.n, 'the statistics were meant to see no pending task').toBe(0);

    const read = async () => Number((await db.query<{ n: string }>(`
      select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
      from pg_catalog.pg_stat_xact_user_tables where relid = 'public.task_handoffs'::regclass`)).rows[0]!.n);
    const reads: Record<string, number> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      const before = await read();
      const answer = await call();
      reads[name] = (await read()) - before;
      return answer;
    };
    await db.query('begin');
    try {
      await db.query(`select set_config('request.jwt.claims', '{"role": "authenticated", "agent_id": "worker"}', true), set_config('role', 'authenticated', true)`);
      const { rows: claimed } = await measure('claim', () => db.query('select id, claim_token from public.claim_next_tasks(10, null, null, true)'));
      expect(claimed).toHaveLength(10);
      await measure('renewal', () => db.query('select * from public.check_claims($1, $2, true)', [claimed.map((t) => t.id), claimed.map((t) => t.claim_token)]));
      const { rows: reported } = await measure('report', () => db.query('select * from public.report_outcomes($1)',
        [JSON.stringify(claimed.map((t) => ({ task_id: t.id, claim_token: t.claim_token })))]));
      expect(reported.map((r) => r.status)).toEqual(claimed.map(() => 'completed'));
      await measure('inbox', () => db.query('select * from public.my_tasks()'));
      await db.query('reset role');
      await measure('sweep', () => db.query('select public.sweep_tasks()'));
    } finally {
      await db.query('rollback');
    }
    // Ten tasks and their rows are a few dozen; the backlog is 3,000.
    for (const [name, rows] of Object.entries(reads)) expect(rows, `${name} read ${rows} rows of task_handoffs`).toBeLessThan(BACKLOG / 10);
  });
});
