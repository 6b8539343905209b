/**
 * The embedded stack is shaped as a hosted project is, so that the suite fails on what only hosted
 * would refuse (docs/stack.md, "Hosted's rules, here too"): the migrations applied by a `postgres` that
 * is no superuser, the API roles' settings, and Realtime's rights and shapes.
 */
import { describe, expect, it } from 'vitest';
import { isRetryable, toBatonError, TransientError } from '../src/errors.js';
import { database } from './helpers.js';

const db = database();

describe('the embedded stack, as hosted', () => {
  it('connects as postgres, which is no superuser, and whose are every table and function of Baton', async () => {
    const { rows: [me] } = await db.query(`select current_user as name, r.rolsuper, r.rolcreaterole, r.rolbypassrls
      from pg_roles r where r.rolname = current_user`);
    expect(me).toEqual({ name: 'postgres', rolsuper: false, rolcreaterole: true, rolbypassrls: true });
    const { rows: owners } = await db.query<{ owner: string }>(`
      select distinct owner from (
        select c.relowner::regrole::text as owner from pg_class c where c.relnamespace in ('public'::regnamespace, 'baton_private'::regnamespace)
        union all
        select p.proowner::regrole::text from pg_proc p where p.pronamespace in ('public'::regnamespace, 'baton_private'::regnamespace)
      ) o`);
    expect(owners).toEqual([{ owner: 'postgres' }]);
  });

  it("gives the API roles hosted's inheritance and timeouts", async () => {
    const { rows } = await db.query(`
      select r.rolname, r.rolinherit, coalesce(s.setconfig, '{}') as settings
      from pg_roles r left join pg_db_role_setting s on s.setrole = r.oid and s.setdatabase = 0
      where r.rolname in ('anon', 'authenticated', 'service_role', 'authenticator') order by 1`);
    expect(rows).toEqual([
      { rolname: 'anon', rolinherit: true, settings: ['statement_timeout=3s'] },
      { rolname: 'authenticated', rolinherit: true, settings: ['statement_timeout=8s'] },
      { rolname: 'authenticator', rolinherit: false, settings: expect.arrayContaining(['statement_timeout=8s', 'lock_timeout=8s']) },
      { rolname: 'service_role', rolinherit: true, settings: [] },
    ]);
  });

  it("has Realtime's messages partitioned and owned by supabase_realtime_admin", async () => {
    const { rows: [messages] } = await db.query(`select c.relkind, c.relowner::regrole::text as owner, c.relrowsecurity
      from pg_class c where c.oid = 'realtime.messages'::regclass`);
    expect(messages).toEqual({ relkind: 'p', owner: 'supabase_realtime_admin', relrowsecurity: true });
  });

  it('loses a broadcast whose caller may run send() but not store the message, with only a warning, as hosted does', async () => {
    const client = await database({ superuser: true }).connect();
    const warnings: string[] = [];
    client.on('notice', (notice) => { if (notice.severity === 'WARNING') warnings.push(notice.message ?? ''); });
    try {
      await client.query('begin');
      const topic = `agent:nobody-${Date.now()}`;
      // A caller allowed to run send() (Baton allows no API role), without the rights to store a message.
      await client.query('grant execute on function realtime.send(jsonb, text, text, boolean) to authenticated');
      await client.query('set local role authenticated');
      await client.query(`select realtime.send('{}', 'work', $1, true)`, [topic]);
      await client.query('reset role');
      const { rows: [queued] } = await client.query(`select count(*)::int as n from realtime.outbox where message like '%' || $1 || '%'`, [topic]);
      expect(queued.n).toBe(0);
      expect(warnings.join('\n')).toMatch(/ErrorSendingBroadcastMessage: permission denied for table outbox/);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
  it("calls a statement stopped by a role's statement_timeout one to make again (nothing was changed)", async () => {
    const client = await db.connect();
    try {
      await client.query('begin');
      await client.query("set local statement_timeout = '20ms'");
      const stopped = await client.query('select pg_sleep(1)').then(() => undefined, (err: { code: string; message: string }) => err);
      expect(stopped?.code).toBe('57014');
      const error = toBatonError({ code: stopped!.code, message: stopped!.message });
      expect(error).toBeInstanceOf(TransientError);
      expect(isRetryable(error)).toBe(true);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});
