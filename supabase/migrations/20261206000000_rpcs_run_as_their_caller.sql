-- The API's functions run with their caller's rights; the privileged code lives where the API cannot
-- reach it (issue 48, finding 2).
--
-- Every RPC in public was SECURITY DEFINER. Each checks its caller itself, but Supabase's Security
-- Advisor (lint 0029) warns about every definer function an exposed schema lets signed-in users run,
-- and its guidance is the one kept here: exposed functions run as the caller, and code that needs more
-- lives in a schema the API does not serve. So each RPC moves, unchanged and under the same name, to
-- baton_private (ALTER ... SET SCHEMA keeps its body, rights, settings and grants), and public gets an
-- entry point with the same signature, defaults, volatility and comment that runs as the caller and
-- passes every argument on. The rules stay in one place: the function in baton_private.
--
-- The entry points are plpgsql: a plpgsql function keeps its plan for the session (PostgREST's pooled
-- connections), where a non-inlinable SQL function plans its body again on every call; and a SET
-- search_path clause (lint 0011) stops inlining anyway.
--
-- Then lint 0011: the helpers in baton_private that had no search_path get an empty one (their bodies
-- already name every schema), and lint 0001: recurring hand-offs' foreign keys get their indexes (a
-- retention pass deleting tasks checks recurring_handoffs.last_task_id for each).

do $$
declare
  f record;
  args text;
  call text;
  acl record;
begin
  perform pg_catalog.set_config('search_path', '', true);
  for f in
    select p.oid, p.proname, p.proretset, p.provolatile, p.pronargs,
           pg_catalog.pg_get_function_arguments(p.oid) as arguments,
           pg_catalog.pg_get_function_identity_arguments(p.oid) as identity,
           pg_catalog.pg_get_function_result(p.oid) as result,
           pg_catalog.obj_description(p.oid, 'pg_proc') as note
    from pg_catalog.pg_proc p
    where p.pronamespace = 'public'::regnamespace and p.prosecdef and p.prokind = 'f'
    order by p.proname
  loop
    execute pg_catalog.format('alter function public.%I(%s) set schema baton_private', f.proname, f.identity);

    select coalesce(pg_catalog.string_agg('$' || n, ', ' order by n), '') into args
    from pg_catalog.generate_series(1, f.pronargs) n;
    call := pg_catalog.format('baton_private.%I(%s)', f.proname, args);

    execute pg_catalog.format(
      'create function public.%I(%s) returns %s language plpgsql %s security invoker set search_path = '''' as %L',
      f.proname, f.arguments, f.result,
      case f.provolatile when 's' then 'stable' when 'i' then 'immutable' else 'volatile' end,
      case when f.proretset then pg_catalog.format('begin return query select * from %s; end', call)
           else pg_catalog.format('begin return %s; end', call) end);
    execute pg_catalog.format('comment on function public.%I(%s) is %L', f.proname, f.identity, f.note);

    -- Whoever may call it in baton_private may call its entry point, and nobody else: the schema's
    -- default privileges would have granted it to every API role.
    execute pg_catalog.format('revoke all on function public.%I(%s) from public, anon, authenticated, service_role',
                              f.proname, f.identity);
    for acl in
      select pg_catalog.quote_ident(r.rolname) as grantee
      from pg_catalog.aclexplode((select p.proacl from pg_catalog.pg_proc p where p.oid = f.oid)) a
      join pg_catalog.pg_roles r on r.oid = a.grantee
      where a.privilege_type = 'EXECUTE' and r.rolname in ('anon', 'authenticated', 'service_role')
    loop
      execute pg_catalog.format('grant execute on function public.%I(%s) to %s', f.proname, f.identity, acl.grantee);
    end loop;
  end loop;
end
$$;

alter function baton_private.settings() set search_path = '';
alter function baton_private.current_agent_id() set search_path = '';
alter function baton_private.event_actor() set search_path = '';
alter function baton_private.is_slug(text) set search_path = '';
alter function baton_private.transition_allowed(public.task_status, public.task_status) set search_path = '';
alter function baton_private.tg_task_handoffs__transition() set search_path = '';
alter function baton_private.work_topic(text, text[]) set search_path = '';
alter function baton_private.usage_slot() set search_path = '';
alter function baton_private.check_json_shape(jsonb, text) set search_path = '';
alter function baton_private.baton_relations() set search_path = '';
alter function baton_private.beat_due(timestamptz, boolean) set search_path = '';

create index recurring_handoffs_from_agent_idx on public.recurring_handoffs (from_agent);
create index recurring_handoffs_to_agent_idx on public.recurring_handoffs (to_agent);
create index recurring_handoffs_last_task_idx on public.recurring_handoffs (last_task_id);

-- Realtime's join check reads realtime.messages through this policy: the topic's rule is now asked once
-- per query, not once per row (the form lint 0003 asks for).
alter policy "Agents can listen on their own topic, their capabilities' topics and open work"
  on realtime.messages
  using (realtime.messages.extension = 'broadcast' and (select baton_private.may_listen((select realtime.topic()))));
