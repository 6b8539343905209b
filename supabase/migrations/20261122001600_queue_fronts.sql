-- Claims read each queue from its front, whatever the statistics say.
--
-- A claim wants the first tasks of a queue by priority and age, and the indexes of claimable tasks
-- (…1400_lean_statements.sql) hold each queue in that order. But with statistics taken while little was
-- pending (ANALYZE on a quiet queue, then a burst), the planner estimated one pending task and chose to
-- read every open task through another index and sort them: a claim of 10 from a queue of 3,000 read
-- 9,041 rows of task_handoffs (test/plans.test.ts), so a burst drained in quadratic time. On a stack
-- with a long history, a claim and completion cost 1.07-1.75 ms of Postgres per task instead of 0.86-0.93.
--
-- The statements that read the queues now run with sorting disabled, so the only plans left without a
-- penalty are those that read an index in the queue's order and stop at the limit. They sit in two
-- helpers of their own, so that the setting does not reach the triggers the claim's UPDATE fires (whose
-- plans are kept for the session and shared with every other caller).

-- Whether anything is claimable now: a task addressed to the agent, or the front of one of its queues.
create function baton_private.claimable_exists(me text, mine text[], queues text[]) returns boolean
language plpgsql stable set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
begin
  return exists (
      select from (
        select from public.task_handoffs t
        where t.status = 'pending' and t.to_agent = me and (t.not_before is null or t.not_before <= now())
        order by t.priority desc, t.created_at
        limit 1) found)
    or exists (
      -- A lateral LIMIT 1 per queue, each reading its own part of the index.
      select from unnest(queues) as q (capability)
      cross join lateral (
        select from public.task_handoffs t
        where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
          and t.required_capabilities <@ mine and (t.not_before is null or t.not_before <= now())
          and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
        order by t.priority desc, t.created_at
        limit 1) found);
end
$$;

-- Locks up to `wanted` claimable tasks, skipping those others hold locked: tasks addressed to the agent
-- first, then broadcasts it can do, each by priority, then age. Returns their ids.
create function baton_private.lock_claimable(me text, mine text[], queues text[], p_capabilities text[], wanted integer)
returns uuid[]
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
declare
  ids uuid[];
  more uuid[];
begin
  select coalesce(array_agg(picked.id), '{}') into ids from (
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.to_agent = me
      and (t.not_before is null or t.not_before <= now())
      and (p_capabilities is null or t.required_capabilities @> p_capabilities)
    order by t.priority desc, t.created_at
    limit wanted
    for update skip locked
  ) picked;

  if cardinality(ids) < wanted then
    -- Each capability's front, locked with SKIP LOCKED, merged by priority and age (this sort, of at
    -- most `wanted` rows per queue, is the one every plan has).
    select coalesce(array_agg(picked.id), '{}') into more from (
      select front.id from unnest(queues) as q (capability)
      cross join lateral (
        select t.id, t.priority, t.created_at from public.task_handoffs t
        where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
          and t.required_capabilities <@ mine
          and (t.not_before is null or t.not_before <= now())
          and (p_capabilities is null or t.required_capabilities @> p_capabilities)
          and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
        order by t.priority desc, t.created_at
        limit wanted - cardinality(ids)
        for update of t skip locked
      ) front
      order by front.priority desc, front.created_at
      limit wanted - cardinality(ids)
    ) picked;
    ids := ids || more;
  end if;
  return ids;
end
$$;

revoke all on function baton_private.claimable_exists(text, text[], text[]) from public, anon, authenticated;
revoke all on function baton_private.lock_claimable(text, text[], text[], text[], integer) from public, anon, authenticated;

-- As in …1400_lean_statements.sql, the queues now read through the helpers above.
create or replace function public.claim_next_tasks(
  p_limit integer default 1,
  p_capabilities text[] default null,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns setof public.task_handoffs
language plpgsql security definer set search_path = '' set plan_cache_mode = force_generic_plan
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  wanted integer;
  mine text[];
  queues text[];
  ids uuid[];
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'a batch must claim between 1 and 1000 tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Ask for as many tasks as you have free slots.';
  end if;
  mine := baton_private.agent_capabilities(me);
  -- The queues of broadcasts this agent may take: one per capability it has, and '' for those that need none.
  queues := array(select distinct q from unnest(mine || ''::text) as q);
  -- Look before locking anything: an empty poll writes nothing.
  if not baton_private.claimable_exists(me, mine, queues) then
    return;
  end if;
  wanted := least(p_limit, baton_private.free_capacity(me));
  if wanted < 1 then
    return;
  end if;
  ids := baton_private.lock_claimable(me, mine, queues, p_capabilities, wanted);
  perform baton_private.mark_claimed(ids, me, lease, p_start);
  return query
    select * from public.task_handoffs where id = any (ids) order by priority desc, created_at;
end
$$;
