/** The migration that schedules the sweep with pg_cron leaves a database without pg_cron as it was. */
import { describe, expect, it } from 'vitest';
import { database } from './helpers.js';

const db = database();

describe('the sweep schedule', () => {
  it('is skipped, saying why, where pg_cron is not installed', async () => {
    const { rows } = await db.query('select baton_private.schedule_sweep() as said');
    expect(rows[0].said).toMatch(/^pg_cron is not installed here/);
    expect((await db.query("select count(*)::int as n from pg_namespace where nspname = 'cron'")).rows[0].n).toBe(0);
  });

  it('can be run by no API role', async () => {
    const { rows } = await db.query(`select r.rolname, has_function_privilege(r.rolname, 'baton_private.schedule_sweep()', 'execute') as can
      from pg_roles r where r.rolname in ('anon', 'authenticated', 'service_role') order by 1`);
    expect(rows).toEqual([
      { rolname: 'anon', can: false }, { rolname: 'authenticated', can: false }, { rolname: 'service_role', can: false },
    ]);
  });
});
