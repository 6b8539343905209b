/** Every table is guarded: RLS on, a comment for Studio, and nothing at all for the anon key. */
import { describe, expect, it } from 'vitest';
import { connect } from '../src/client/connection.js';
import { database, stack, untyped } from './helpers.js';

const db = database();
// Any relation name, typed or not: the database decides.
const anon = untyped(connect({ url: stack.SUPABASE_URL, apiKey: stack.SUPABASE_ANON_KEY }));

describe('the schema', () => {
  it('enables row-level security on every table in public', async () => {
    const { rows } = await db.query<{ relname: string; relrowsecurity: boolean }>(
      `select c.relname, c.relrowsecurity from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'r' order by 1`,
    );
    expect(rows.map((r) => r.relname)).toEqual(expect.arrayContaining(['agents', 'agent_messages', 'task_artifacts', 'task_events', 'task_handoffs']));
    expect(rows.filter((r) => !r.relrowsecurity)).toEqual([]);
  });

  it('explains every table in a comment, for Supabase Studio', async () => {
    const { rows } = await db.query<{ relname: string }>(
      `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'r' and obj_description(c.oid, 'pg_class') is null`,
    );
    expect(rows).toEqual([]);
  });

  it('reads views with the caller\'s rights, so row-level security applies through them', async () => {
    const { rows } = await db.query<{ relname: string; options: string[] | null }>(
      `select c.relname, c.reloptions as options from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'v' order by 1`,
    );
    expect(rows.map((r) => r.relname)).toEqual(['agent_presence', 'dead_letters', 'stuck_claims', 'task_counts', 'task_lineage', 'task_queue', 'task_throughput', 'waiting_tasks']);
    expect(rows.filter((r) => !r.options?.includes('security_invoker=true'))).toEqual([]);
  });

  it('explains every column of the inspection views in Studio', async () => {
    const { rows } = await db.query<{ view: string; column: string }>(
      `select c.relname as view, a.attname as column from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
       where n.nspname = 'public' and c.relname in ('task_queue', 'stuck_claims', 'dead_letters', 'waiting_tasks')
         and col_description(c.oid, a.attnum) is null`,
    );
    expect(rows).toEqual([]);
    const { rows: views } = await db.query<{ n: number }>(
      `select count(*)::int as n from pg_class c where c.relname in ('task_queue', 'stuck_claims', 'dead_letters', 'waiting_tasks')
         and obj_description(c.oid, 'pg_class') is not null`);
    expect(views[0]!.n).toBe(4);
  });

  it('pins search_path on every security definer function', async () => {
    const { rows } = await db.query<{ proname: string }>(
      `select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname in ('public', 'baton_private') and p.prosecdef
         and not exists (select from unnest(p.proconfig) c where c like 'search_path=%')`,
    );
    expect(rows).toEqual([]);
  });

  it('lets the anon key read and write nothing', async () => {
    const tables = ['agents', 'agent_tokens', 'task_handoffs', 'task_events', 'agent_messages', 'baton_settings',
      'task_artifacts', 'task_status_transitions', 'agent_presence', 'task_lineage'];
    for (const table of tables) {
      const { error } = await anon.from(table).select('*').limit(1);
      expect(error?.code, table).toBe('42501');
    }
    const insert = await anon.from('agents').insert({ id: 'anon-intruder' });
    expect(insert.error?.code).toBe('42501');
    const rpc = await anon.rpc('handoff_task', { p_title: 'x' });
    expect(rpc.error?.code).toBe('42501');
  });

  it('refuses requests without a known API key at the gateway, as Supabase does', async () => {
    const forged = connect({ url: stack.SUPABASE_URL, apiKey: 'not-a-key' });
    const { error, status } = await forged.from('agents').select('*');
    expect(status).toBe(401);
    expect(error?.message).toMatch(/Invalid API key/);
  });
});

describe('internals', () => {
  it('cannot be called directly by the API roles', async () => {
    const client = await db.connect();
    try {
      await client.query('begin');
      await client.query('set local role authenticated');
      await expect(client.query(`select baton_private.mark_claimed('{}', 'x', interval '1 minute', false)`))
        .rejects.toMatchObject({ code: '42501' });
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});
