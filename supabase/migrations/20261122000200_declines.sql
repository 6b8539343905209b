-- Work an agent cannot do is declined, not failed: a task addressed to it is rejected with the reason,
-- and a broadcast goes back to pending for a capable peer and is never claimed by this agent again.
-- Neither counts as an attempt.

create table public.task_declines (
  task_id uuid not null references public.task_handoffs (id) on delete cascade,
  agent_id text not null references public.agents (id) on delete cascade,
  reason text not null,
  declined_at timestamptz not null default now(),
  primary key (task_id, agent_id)
);
alter table public.task_declines enable row level security;
comment on table public.task_declines is 'Broadcasts an agent claimed and handed back because it cannot do them (e.g. no executor for the task type). claim_next_tasks never offers such a task to that agent again.';
comment on column public.task_declines.reason is 'What the agent lacked, e.g. no executor for task_type "development".';
create index task_declines_agent_idx on public.task_declines (agent_id);

revoke all on table public.task_declines from anon, authenticated;
grant select on table public.task_declines to authenticated;
grant all on table public.task_declines to service_role;
create policy "Agents can see their own declines and those of tasks they sent" on public.task_declines
  for select to authenticated
  using (
    agent_id = (select baton_private.current_agent_id())
    or exists (select from public.task_handoffs t where t.id = task_id and t.from_agent = (select baton_private.current_agent_id()))
  );

create function public.decline_task(p_task_id uuid, p_claim_token uuid, p_reason text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  reason text := left(p_reason, 2000);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  perform baton_private.require_text(p_reason, 'the reason for declining', 'Say what this agent lacks, e.g. no executor for task_type "development".');
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; only a claimed or running task can be declined', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer, then decline it.';
  end if;
  perform baton_private.set_note(format('declined by %s: %s', me, reason));
  update public.task_handoffs set status = 'pending', attempts = greatest(attempts - 1, 0), status_reason = reason
  where id = t.id returning * into t;
  if t.to_agent = me then
    perform baton_private.set_note(reason);
    update public.task_handoffs set status = 'rejected' where id = t.id returning * into t;
  else
    insert into public.task_declines (task_id, agent_id, reason) values (t.id, me, reason)
    on conflict (task_id, agent_id) do update set reason = excluded.reason, declined_at = now();
  end if;
  perform baton_private.set_note(null);
  return t;
end
$$;
comment on function public.decline_task is 'The holder hands back a task it cannot do, without counting an attempt: addressed to it, the task is rejected with the reason; a broadcast goes back to pending for another agent and is never offered to this one again.';
revoke all on function public.decline_task from public, anon;
grant execute on function public.decline_task to authenticated;

-- claim_next_tasks as before, less the broadcasts this agent declined, and looking before it locks.
create or replace function public.claim_next_tasks(
  p_limit integer default 1,
  p_capabilities text[] default null,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns setof public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  wanted integer;
  mine text[];
  ids uuid[];
  more uuid[];
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'a batch must claim between 1 and 1000 tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Ask for as many tasks as you have free slots.';
  end if;
  mine := baton_private.agent_capabilities(me);
  -- Look before locking anything: an empty poll writes nothing.
  -- (Two tests, not one with an OR, so that each reads its own partial index.)
  if not exists (
       select from public.task_handoffs t
       where t.status = 'pending' and t.to_agent = me and (t.not_before is null or t.not_before <= now()))
     and not exists (
       select from public.task_handoffs t
       where t.status = 'pending' and t.to_agent is null and t.required_capabilities <@ mine
         and (t.not_before is null or t.not_before <= now())
         and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)) then
    return;
  end if;
  wanted := least(p_limit, baton_private.free_capacity(me));
  if wanted < 1 then
    return;
  end if;

  -- Tasks addressed to the agent come first, then broadcasts it can do; each by priority, then age.
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
    select coalesce(array_agg(picked.id), '{}') into more from (
      select t.id from public.task_handoffs t
      where t.status = 'pending' and t.to_agent is null and t.required_capabilities <@ mine
        and (t.not_before is null or t.not_before <= now())
        and (p_capabilities is null or t.required_capabilities @> p_capabilities)
        and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
      order by t.priority desc, t.created_at
      limit wanted - cardinality(ids)
      for update skip locked
    ) picked;
    ids := ids || more;
  end if;

  perform baton_private.mark_claimed(ids, me, lease, p_start);
  return query
    select * from public.task_handoffs where id = any (ids) order by priority desc, created_at;
end
$$;
