-- Where pg_cron exists (hosted Supabase, once it is enabled), the database sweeps itself every minute,
-- so that dropped claims are re-queued and overdue tasks cancelled even when no daemon is running.
-- Where it does not (the embedded stack, a bare Postgres), nothing changes: daemons and `baton sweep`
-- do it. Scheduling by name replaces an earlier job of the same name, so this is safe to run again.

create function baton_private.schedule_sweep() returns text
language plpgsql set search_path = ''
as $$
begin
  if not exists (select from pg_catalog.pg_extension where extname = 'pg_cron') then
    if exists (select from pg_catalog.pg_available_extensions where name = 'pg_cron')
       and pg_catalog.current_setting('shared_preload_libraries', true) like '%pg_cron%' then
      create extension pg_cron;
    else
      return 'pg_cron is not installed here; the daemons (or `baton sweep` from cron) sweep instead';
    end if;
  end if;
  perform cron.schedule('baton-sweep', '* * * * *', 'select public.sweep_tasks()');
  return 'scheduled "baton-sweep" every minute with pg_cron';
end
$$;
comment on function baton_private.schedule_sweep is 'Schedules sweep_tasks every minute with pg_cron where it exists (enabling it where it is preloaded), and says what it did. Run it again after enabling pg_cron on a project that did not have it.';
revoke all on function baton_private.schedule_sweep() from public, anon, authenticated, service_role;

do $$
begin
  raise notice '%', baton_private.schedule_sweep();
end
$$;
