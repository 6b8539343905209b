-- The tasks an agent may claim now, as the claim decides it (issue 72): the "pending" box of the CLI,
-- MCP's "claimable" box and the protocol's `tasks --pending` listed every pending task addressed to
-- the agent or broadcast, where a claim also weighs the task's capabilities, its backoff or schedule
-- (`not_before`, which a dependency's wait and a budget's hold also set) and the agent's declines.
-- The box now asks the database. `claimable_ids` is lock_claimable's choice without its locks: the
-- two are held together by test/claimable.test.ts, which claims what the box lists.

create function baton_private.claimable_ids(me text, mine text[], queues text[], wanted integer)
returns uuid[]
language plpgsql stable set search_path = ''
set plan_cache_mode = 'force_generic_plan'
as $$
declare
  ids uuid[];
  more uuid[];
begin
  select coalesce(array_agg(picked.id), '{}') into ids from (
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.to_agent = me
      and (t.not_before is null or t.not_before <= now())
    order by t.priority desc, t.created_at
    limit wanted
  ) picked;
  if cardinality(ids) < wanted then
    select coalesce(array_agg(picked.id), '{}') into more from (
      select front.id from unnest(queues) as q (capability)
      cross join lateral (
        select t.id, t.priority, t.created_at from public.task_handoffs t
        where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
          and t.required_capabilities <@ mine
          and (t.not_before is null or t.not_before <= now())
          and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
        order by t.priority desc, t.created_at
        limit wanted - cardinality(ids)
      ) front
      order by front.priority desc, front.created_at
      limit wanted - cardinality(ids)
    ) picked;
    ids := ids || more;
  end if;
  return ids;
end
$$;
revoke all on function baton_private.claimable_ids(text, text[], text[], integer) from public, anon, authenticated;
comment on function baton_private.claimable_ids(text, text[], text[], integer) is 'The tasks lock_claimable would choose for agent `me` now, oldest of the highest priority first, without locking them: what a claim would take.';

create function baton_private.claimable_tasks(p_limit integer default 50)
returns setof public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  mine text[] := baton_private.agent_capabilities(me);
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'list between 1 and 1000 claimable tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Give a limit from 1 to 1000.';
  end if;
  return query
    select t.* from public.task_handoffs t
    where t.id = any (baton_private.claimable_ids(me, mine, array(select distinct q from unnest(mine || ''::text) as q), p_limit))
    order by t.priority desc, t.created_at;
end
$$;
revoke all on function baton_private.claimable_tasks(integer) from public, anon;
grant execute on function baton_private.claimable_tasks(integer) to authenticated;
comment on function baton_private.claimable_tasks(integer) is 'The tasks the calling agent may claim now, as a claim decides it (addressed to it or broadcast to its capabilities, due, not declined), highest priority and oldest first. For an agent.';

create function public.claimable_tasks(p_limit integer default 50)
returns setof public.task_handoffs
language plpgsql stable set search_path = ''
as $$begin return query select * from baton_private.claimable_tasks($1); end$$;
revoke all on function public.claimable_tasks(integer) from public, anon;
grant execute on function public.claimable_tasks(integer) to authenticated;
comment on function public.claimable_tasks(integer) is 'The tasks the calling agent may claim now, as a claim decides it (addressed to it or broadcast to its capabilities, due, not declined), highest priority and oldest first. For an agent.';
