/**
 * Every path obeys every rule, enumerated from the catalogue rather than from a list kept by hand: each
 * relation the API roles can reach is named by baton_private.baton_relations() (what the request check
 * guards), is refused to the anon key and to a token without an agent_id, answers an agent's direct
 * write with 403 and never 5xx, and is guarded by row-level security (tables) or read with the caller's
 * rights (views); each function the API roles can run refuses a caller that is no agent. A relation or
 * function added later is held to all of it by these tests, without their being edited.
 */
import crypto from 'node:crypto';
import { SignJWT } from 'jose';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { database, newAgent, stack } from './helpers.js';

const db = database();

/** Relations in public that an API role may read or write: what the API serves. */
const servedRelations = `
  select c.relname, c.relkind, c.relrowsecurity, coalesce('security_invoker=true' = any (c.reloptions), false) as invoker
  from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
  where n.nspname = 'public' and c.relkind in ('r', 'v', 'm', 'p', 'f')
    and (has_table_privilege('anon', c.oid, 'select, insert, update, delete')
         or has_table_privilege('authenticated', c.oid, 'select, insert, update, delete'))
  order by 1`;

/** Served relations that the request check does not name: each one a hole. */
async function uncovered(client: pg.Pool | pg.PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ relname: string }>(
    `select s.relname from (${servedRelations}) s where s.relname <> all (baton_private.baton_relations())`);
  return rows.map((r) => r.relname);
}

const relations = (await db.query<{ relname: string; relkind: string; relrowsecurity: boolean; invoker: boolean }>(servedRelations)).rows;

/** A token of the project for a signed-in user who is no agent (every Supabase Auth user has one). */
const noAgentToken = await new SignJWT({ role: 'authenticated', sub: crypto.randomUUID() })
  .setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h')
  .sign(new TextEncoder().encode(stack.SUPABASE_JWT_SECRET));

const rest = (relation: string, init: { method?: string; token?: string; body?: unknown } = {}) =>
  fetch(`${stack.SUPABASE_URL}/rest/v1/${relation}${init.method === 'PATCH' || init.method === 'DELETE' ? '?id=eq.00000000-0000-0000-0000-000000000000' : ''}`, {
    method: init.method ?? 'GET',
    headers: {
      apikey: stack.SUPABASE_ANON_KEY, 'content-type': 'application/json',
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

describe('the relations the API serves', () => {
  it('are every one named by the request check (baton_private.baton_relations)', async () => {
    expect(relations.length).toBeGreaterThanOrEqual(17);
    expect(await uncovered(db)).toEqual([]);
  });

  it('would show a view added later without being named, and fail the test above', async () => {
    const client = await db.connect();
    try {
      await client.query('begin');
      await client.query('create view public.added_later with (security_invoker = true) as select id, title from public.task_handoffs');
      await client.query('grant select on public.added_later to authenticated');
      expect(await uncovered(client)).toEqual(['added_later']);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  it('are guarded by row-level security (tables) or read with the caller\'s rights (views)', () => {
    expect(relations.filter((r) => r.relkind === 'r' && !r.relrowsecurity).map((r) => r.relname)).toEqual([]);
    expect(relations.filter((r) => r.relkind === 'v' && !r.invoker).map((r) => r.relname)).toEqual([]);
  });

  it.each(relations.map((r) => [r.relname]))('%s: refused to the anon key and to a token without an agent_id, with a hint', async (relation) => {
    for (const [token, said] of [[undefined, 'the anon key alone'], [noAgentToken, 'a token without an agent_id']] as const) {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        const res = await rest(relation, { method, token, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
        const body = await res.json() as { code: string; message: string; hint: string | null };
        expect([401, 403], `${method} ${relation} (${said}): ${JSON.stringify(body)}`).toContain(res.status);
        expect(body.message, `${method} ${relation}`).toMatch(new RegExp(`^(${said} cannot read or write ${relation}|${relation} is a view; it cannot be written)$`));
        expect(body.hint).toBeTruthy();
      }
    }
  });

  it.each(relations.map((r) => [r.relname, r.relkind]))('%s: an agent\'s direct write is answered, never with 5xx; a view refuses it with a hint', async (relation, kind) => {
    const agent = await newAgent('writer');
    for (const method of ['POST', 'PATCH', 'DELETE']) {
      const res = await rest(relation, { method, token: agent.token, body: method === 'DELETE' ? undefined : {} });
      const body = await res.text();
      expect(res.status, `${method} ${relation}: ${body}`).toBeLessThan(500);
      if (kind === 'v') {
        expect(res.status).toBe(403);
        expect(JSON.parse(body)).toMatchObject({ code: '42501', message: `${relation} is a view; it cannot be written`, hint: expect.stringContaining('RPC') });
      }
    }
  });
});

describe('row-level security alone', () => {
  it('shows a signed-in user who is no agent nothing of any relation, whatever path reaches it (rpc/graphql, a future endpoint)', async () => {
    const sender = await newAgent('seeder');
    const client = await db.connect();
    try {
      await client.query('begin');
      // Rows of every kind such a user could have seen: a capability-free broadcast with its history,
      // and a message to everyone, made by an agent in this transaction (rolled back, seen by no other test).
      await client.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
        [JSON.stringify({ role: 'authenticated', agent_id: sender.id })]);
      await client.query(`select public.handoff_task('a broadcast anyone could claim')`);
      await client.query(`insert into public.agent_messages (from_agent, kind, body) values ($1, 'note', '{"text": "to everyone"}')`, [sender.id]);
      // Now a user of the project's Auth, with the pre-request check out of the way, as rpc/graphql is.
      await client.query(`select set_config('request.jwt.claims', $1, true)`, [JSON.stringify({ role: 'authenticated', sub: crypto.randomUUID() })]);
      const seen: string[] = [];
      for (const { relname } of relations) {
        const { rows: [row] } = await client.query<{ n: number }>(`select count(*)::int as n from public.${relname}`);
        if (row!.n > 0) seen.push(`${relname}: ${row!.n} rows`);
      }
      expect(seen).toEqual([]);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});

describe('the functions the API serves', () => {
  it('refuse a caller that is no agent, each one', async () => {
    const { rows: functions } = await db.query<{ signature: string; nargs: number }>(`
      select p.oid::regprocedure::text as signature, p.pronargs as nargs
      from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'public' and p.prokind = 'f' and has_function_privilege('authenticated', p.oid, 'execute')
      order by 1`);
    expect(functions.length).toBeGreaterThan(20);
    const client = await db.connect();
    const answered: string[] = [];
    try {
      for (const fn of functions) {
        const name = fn.signature.slice(0, fn.signature.indexOf('('));
        await client.query('begin');
        try {
          await client.query(`select set_config('request.jwt.claims', '{"role": "authenticated"}', true), set_config('role', 'authenticated', true)`);
          await client.query(`select ${name}(${Array.from({ length: fn.nargs }, () => 'null').join(', ')})`);
          answered.push(fn.signature);
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code !== 'BT006') answered.push(`${fn.signature}: ${code} ${(err as Error).message}`);
        } finally {
          await client.query('rollback');
        }
      }
    } finally {
      client.release();
    }
    // The sweep is the operator's and every agent's, and needs no identity: it changes only what its rules say.
    expect(answered).toEqual(['sweep_tasks()']);
  });

  it('refuse the anon key alone (curl without an agent token) over HTTP, each one, saying what to send', async () => {
    // Each with its parameters named, as PostgREST finds the function before the request check runs.
    const { rows } = await db.query<{ proname: string; args: string[] }>(`
      select p.proname, coalesce(p.proargnames[1:p.pronargs], '{}') as args from pg_catalog.pg_proc p
      where p.pronamespace = 'public'::regnamespace and p.prokind = 'f' and has_function_privilege('authenticated', p.oid, 'execute')
      order by 1`);
    expect(rows.length).toBeGreaterThan(20);
    const said: string[] = [];
    for (const { proname, args } of rows) {
      const res = await fetch(`${stack.SUPABASE_URL}/rest/v1/rpc/${proname}`, {
        method: 'POST', headers: { apikey: stack.SUPABASE_ANON_KEY, 'content-type': 'application/json' },
        body: JSON.stringify(Object.fromEntries(args.map((a) => [a, null]))),
      });
      const body = await res.json() as { message: string; hint: string | null };
      if (![401, 403].includes(res.status) || body.message !== `the anon key alone cannot call ${proname}` || !body.hint?.includes('BATON_AGENT_TOKEN')) {
        said.push(`${proname}: ${res.status} ${JSON.stringify(body)}`);
      }
    }
    expect(said).toEqual([]);
  });

  it('leave the answers of functions that are not Baton\'s to Postgres', async () => {
    const client = await db.connect();
    try {
      // Another app's function on the same project, which anon may not run (planted in a transaction,
      // rolled back): the request check lets the call through, for Postgres to refuse in its own words.
      await client.query('begin');
      await client.query('create function public.another_apps_function() returns int language sql as $$ select 1 $$');
      await client.query('revoke all on function public.another_apps_function() from public, anon');
      const asAnon = (fn: string) => client.query(`select set_config('request.jwt.claims', '{"role": "anon"}', true),
        set_config('request.path', '/rpc/${fn}', true), set_config('request.method', 'POST', true)`);
      await asAnon('another_apps_function');
      await client.query('select baton_private.check_request()');
      await asAnon('handoff_task');
      await expect(client.query('select baton_private.check_request()')).rejects.toThrow('the anon key alone cannot call handoff_task');
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});

/**
 * The checks of Supabase's Security and Performance Advisors that matter for Baton (the lints of
 * supabase/splinter, the numbers below are theirs), written as catalogue queries over what Baton owns:
 * each answers the objects that break its rule. Each must answer nothing on the migrated schema, and
 * something once a defect of its kind is planted (in a transaction, rolled back).
 */
const advisorChecks: { lint: string; query: string; plant: string[]; keep?: (row: Record<string, string>) => boolean }[] = [
  {
    lint: '0028/0029 a SECURITY DEFINER function an API role can run in an exposed schema',
    query: `select p.oid::regprocedure::text from pg_proc p
            where p.pronamespace = 'public'::regnamespace and p.prosecdef
              and (has_function_privilege('anon', p.oid, 'execute') or has_function_privilege('authenticated', p.oid, 'execute'))`,
    plant: [`create function public.planted() returns int language sql security definer set search_path = '' as 'select 1'`,
      'grant execute on function public.planted() to authenticated'],
  },
  {
    lint: '0011 a function whose search_path the caller decides',
    query: `select p.oid::regprocedure::text from pg_proc p
            where p.pronamespace in ('public'::regnamespace, 'baton_private'::regnamespace)
              and not exists (select from pg_depend d where d.objid = p.oid and d.deptype = 'e')
              and not exists (select from unnest(coalesce(p.proconfig, '{}')) c where c like 'search_path=%')`,
    plant: [`create function baton_private.planted() returns int language sql as 'select 1'`],
  },
  {
    lint: '0013 a table in an exposed schema without row-level security',
    query: `select c.oid::regclass::text from pg_class c
            where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relrowsecurity`,
    plant: ['create table public.planted (id int)'],
  },
  {
    lint: '0010 a view in an exposed schema read with its owner\'s rights',
    query: `select c.oid::regclass::text from pg_class c
            where c.relnamespace = 'public'::regnamespace and c.relkind = 'v'
              and not coalesce('security_invoker=true' = any (c.reloptions), false)`,
    plant: ['create view public.planted as select 1 as one'],
  },
  {
    lint: '0001 a foreign key without an index that starts with its columns',
    query: `select k.conrelid::regclass::text || ' ' || k.conname from pg_constraint k
            where k.contype = 'f' and k.connamespace in ('public'::regnamespace, 'baton_private'::regnamespace)
              and not exists (select from pg_index i where i.indrelid = k.conrelid
                                and (i.indkey::int2[])[0:cardinality(k.conkey) - 1] = k.conkey)`,
    plant: ['create table public.planted (task_id uuid references public.task_handoffs (id))'],
  },
  {
    lint: '0003 a policy that calls a function of nothing in the row once per row, not once per query',
    query: `select p.schemaname || '.' || p.tablename || ': ' || p.policyname as policy,
                   coalesce(p.qual, '') || ' ' || coalesce(p.with_check, '') as expression
            from pg_policies p where p.schemaname in ('public', 'realtime')`,
    keep: (row) => callsPerRow(row.expression!),
    plant: ['create table public.planted (id int)', 'alter table public.planted enable row level security',
      'create policy planted on public.planted for select to authenticated using (baton_private.current_agent_id() is not null)'],
  },
  {
    lint: "pg-safeupdate (hosted loads it in PostgREST's sessions): an UPDATE or DELETE without WHERE",
    query: `select p.oid::regprocedure::text as function, p.prosrc as source from pg_proc p
            where p.pronamespace in ('public'::regnamespace, 'baton_private'::regnamespace)
              and p.prolang in (select l.oid from pg_language l where l.lanname in ('sql', 'plpgsql'))`,
    keep: (row) => writesWithoutWhere(row.source!),
    plant: [`create function baton_private.planted() returns void language sql as 'delete from public.task_declines'`],
  },
];

/**
 * Whether a function's source has an UPDATE or DELETE statement without WHERE, which hosted's
 * pg-safeupdate refuses in every statement of PostgREST's sessions, those inside functions included.
 * Read from the text (string literals and comments left out), so dynamic SQL is not seen.
 */
function writesWithoutWhere(source: string): boolean {
  const code = source.replace(/--[^\n]*/g, '').replace(/'(?:[^']|'')*'/g, "''");
  const writes = /\b(?:update\s+(?:only\s+)?[\w."]+(?:\s+(?:as\s+)?(?!set\b)\w+)?\s+set\b|delete\s+from\b)/gi;
  for (const write of code.matchAll(writes)) {
    const end = code.indexOf(';', write.index);
    if (!/\bwhere\b/i.test(code.slice(write.index, end < 0 ? undefined : end))) return true;
  }
  return false;
}

/**
 * Whether a policy's expression calls a function without arguments outside a sub-select: such a call
 * depends on nothing in the row, and only inside `(SELECT …)` does Postgres run it once per query.
 */
function callsPerRow(expression: string): boolean {
  let outside = '';
  for (let i = 0, depth = 0, skipping = -1; i < expression.length; i++) {
    if (expression[i] === '(') {
      depth++;
      if (skipping < 0 && /^\(\s*SELECT\b/.test(expression.slice(i))) skipping = depth;
    }
    if (skipping < 0) outside += expression[i];
    if (expression[i] === ')') {
      if (depth === skipping) skipping = -1;
      depth--;
    }
  }
  return /[a-z_]+\.[a-z_]+\(\)/.test(outside);
}

describe("Supabase's advisors, as catalogue checks", () => {
  it.each(advisorChecks.map((c) => [c.lint, c]))('%s: none in the schema, and a planted one is found', async (_lint, check) => {
    const found = async (client: pg.Pool | pg.PoolClient) => (await client.query<Record<string, string>>(check.query)).rows
      .filter((row) => check.keep?.(row) ?? true).map((row) => Object.values(row)[0]);
    expect(await found(db)).toEqual([]);
    const client = await db.connect();
    try {
      await client.query('begin');
      for (const statement of check.plant) await client.query(statement);
      expect((await found(client)).join(' ')).toContain('planted');
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});
