-- The small helpers keep a fixed search_path without costing a hand-off a third more (issue 48).
--
-- The previous migration gave each helper an empty search_path (Security Advisor lint 0011). For the
-- SQL ones that cost more than it looked: a SQL function with a SET clause is no longer inlined into
-- its caller, and one that is not inlined plans its body again on every call (about 60 µs each, and a
-- hand-off calls them about ten times). Measured with `npm run bench:variants`, single hand-offs, six
-- rounds: Postgres CPU ms a call 2.24 without the SET clauses, 3.02 with them, 2.42 with the helpers
-- in PL/pgSQL and the SET clauses (a PL/pgSQL function keeps its plan for the session). So they are
-- PL/pgSQL now, with the same bodies, volatility and names. compile_transitions(), which writes
-- transition_allowed() from task_status_transitions whenever that table changes, writes it so too.

create or replace function baton_private.current_agent_id() returns text
language plpgsql stable set search_path = ''
as $$ begin return nullif(auth.jwt() ->> 'agent_id', ''); end $$;

create or replace function baton_private.event_actor() returns text
language plpgsql stable set search_path = ''
as $$
begin
  return coalesce(nullif(pg_catalog.current_setting('baton.actor', true), ''), baton_private.current_agent_id(),
                  nullif(auth.role(), ''), session_user);
end
$$;

create or replace function baton_private.is_slug(value text) returns boolean
language plpgsql immutable set search_path = ''
as $$ begin return value operator(pg_catalog.~) '^[a-z0-9][a-z0-9._:-]{0,62}$'; end $$;

create or replace function baton_private.work_topic(to_agent text, required_capabilities text[]) returns text
language plpgsql immutable set search_path = ''
as $$
begin
  return case when to_agent is not null then 'agent:' || to_agent
              when cardinality(required_capabilities) = 0 then 'tasks:open'
              else 'capability:' || required_capabilities[1] end;
end
$$;

create or replace function baton_private.usage_slot() returns smallint
language plpgsql stable set search_path = ''
as $$ begin return (pg_catalog.pg_backend_pid() % 64)::smallint; end $$;

create or replace function baton_private.beat_due(last_heartbeat timestamptz, is_active boolean) returns boolean
language plpgsql stable set search_path = ''
as $$ begin return last_heartbeat is null or last_heartbeat < now() - interval '1 second' or not is_active; end $$;

create or replace function baton_private.baton_relations() returns text[]
language plpgsql immutable set search_path = ''
as $$
begin
  return array[
    -- tables
    'agents', 'agent_tokens', 'agent_messages', 'agent_usage', 'baton_settings', 'recurring_handoffs',
    'task_handoffs', 'task_events', 'task_artifacts', 'task_declines', 'task_status_transitions',
    -- views
    'agent_presence', 'task_lineage', 'dead_letters', 'waiting_tasks', 'stuck_claims', 'task_queue', 'task_counts',
    'task_throughput'];
end
$$;

create or replace function baton_private.compile_transitions() returns void
language plpgsql security definer set search_path = ''
as $$
declare
  cases text;
begin
  select coalesce(string_agg(pg_catalog.format('when %L then to_status in (%s)', f.from_status, f.targets), ' ' order by f.from_status), '')
  into cases
  from (
    select tr.from_status, string_agg(pg_catalog.format('%L::public.task_status', tr.to_status), ', ' order by tr.to_status) as targets
    from public.task_status_transitions tr
    group by tr.from_status
  ) f;
  execute pg_catalog.format($ddl$
    create or replace function baton_private.transition_allowed(from_status public.task_status, to_status public.task_status)
    returns boolean language plpgsql stable parallel safe set search_path = ''
    as $body$ begin return %s; end $body$
  $ddl$, case when cases = '' then 'false' -- an empty table allows no change at all
              else pg_catalog.format('coalesce(case from_status %s else false end, false)', cases) end);
end
$$;

select baton_private.compile_transitions();
