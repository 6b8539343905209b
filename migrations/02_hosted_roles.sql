-- The roles as a hosted project has them, so that the embedded stack refuses what hosted refuses
-- (issue 48, finding 4). Applied as the cluster's superuser; on a hosted project every statement here
-- is already so, and changes nothing.
--
-- The API roles inherit, and have hosted's timeouts: a statement of the anon key stops after 3 s, one of
-- a signed-in caller (every agent) after 8 s, and PostgREST's own login waits at most 8 s for a lock.
alter role anon inherit;
alter role authenticated inherit;
alter role service_role inherit;
alter role anon set statement_timeout = '3s';
alter role authenticated set statement_timeout = '8s';
alter role authenticator set statement_timeout = '8s';
alter role authenticator set lock_timeout = '8s';

-- A cluster made by this version has `supabase_admin` as its superuser and `postgres` as hosted's
-- demoted owner: no superuser, but CREATEROLE, CREATEDB, REPLICATION and BYPASSRLS, the API roles and
-- Postgres's predefined roles granted, and all rights on the schemas it works in. Baton's migrations
-- are applied as `postgres`. (A stack made earlier has `postgres` as its superuser, and keeps it.)
--
-- What hosted lets `postgres` do through supautils, stock Postgres grants here as closely as it can:
-- policies on realtime.messages (supautils.policy_grants) through membership in the table's owner;
-- settings on authenticator (the pre-request check) through CREATEROLE and ADMIN on it, neither used
-- nor inherited; session_replication_role, PostgREST's settings and the like
-- (privileged_role_allowed_configs) through GRANT SET ON PARAMETER. Event triggers (supautils creates them for `postgres` as a superuser and
-- hands them over) are made by the stack after the migrations, the same way (src/stack/migrate.ts).
do $$
begin
  if not exists (select from pg_catalog.pg_roles where rolname = 'postgres') then
    create role postgres login nosuperuser createdb createrole replication bypassrls;
  end if;
  if (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = 'postgres') then
    return;
  end if;
  execute pg_catalog.format('grant all on database %I to postgres', pg_catalog.current_database());
  grant all on schema public to postgres;
  grant all on schema auth to postgres;
  grant all on all routines in schema auth to postgres;
  grant usage on schema realtime to postgres;
  grant all on all tables in schema realtime to postgres;
  grant all on all routines in schema realtime to postgres;
  grant anon, authenticated, service_role to postgres;
  grant pg_read_all_data, pg_signal_backend, pg_monitor to postgres;
  grant supabase_realtime_admin to postgres;
  grant authenticator to postgres with admin true, inherit false, set false;
  grant set on parameter session_replication_role, track_io_timing, log_lock_waits, log_min_messages,
    "pgrst.db_pre_request", "pgrst.db_schemas", "pgrst.db_extra_search_path", "pgrst.db_max_rows" to postgres;
  -- As on hosted, what `postgres` creates in public is granted to the API roles by default; Baton's
  -- migrations revoke what they do not mean to serve.
  alter default privileges for role postgres in schema public grant all on tables to anon, authenticated, service_role;
  alter default privileges for role postgres in schema public grant all on functions to anon, authenticated, service_role;
  alter default privileges for role postgres in schema public grant all on sequences to anon, authenticated, service_role;
end
$$;
