-- Push: the database says when there is work, through Supabase Realtime's broadcast on private
-- channels, so agents wake at once instead of at their next poll. A message carries task ids and a
-- status at most, never a payload: the claim still goes through claim_task / claim_next_tasks and
-- their rules. Who may listen on which topic is a row-level security policy on realtime.messages,
-- which Realtime (hosted, or the embedded stack's gateway) evaluates as the joining agent.
--
-- Topics:
--   agent:<id>          work addressed to the agent, and news of the tasks it sent or holds
--   capability:<name>   broadcasts needing that capability (sent on a task's first one: everyone who
--                       can take the task holds it)
--   tasks:open          broadcasts needing no capability

-- Whether the requesting agent may listen on `topic`.
create function baton_private.may_listen(topic text) returns boolean
language sql stable security definer set search_path = ''
as $$
  select case
    when topic = 'tasks:open' then true
    when topic like 'agent:%' then substr(topic, 7) = baton_private.current_agent_id()
    when topic like 'capability:%' then exists (
      select from public.agents a
      where a.id = baton_private.current_agent_id() and substr(topic, 12) = any (a.capabilities))
    else false
  end
  and baton_private.current_agent_id() is not null
$$;
revoke all on function baton_private.may_listen(text) from public, anon;
grant execute on function baton_private.may_listen(text) to authenticated;

create policy "Agents can listen on their own topic, their capabilities' topics and open work"
  on realtime.messages for select to authenticated
  using (realtime.messages.extension = 'broadcast' and baton_private.may_listen(realtime.topic()));

-- One message per topic per statement: a batch of a thousand hand-offs is a handful of sends.
create function baton_private.announce(changes jsonb) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  message record;
begin
  for message in
    select c ->> 'topic' as topic, c ->> 'event' as event,
           jsonb_agg(c -> 'task' order by c ->> 'task_id') as tasks
    from jsonb_array_elements(changes) c
    group by 1, 2
  loop
    perform realtime.send(
      jsonb_build_object('tasks', (select jsonb_agg(e.value) from (select value from jsonb_array_elements(message.tasks) limit 100) e)),
      message.event, message.topic, true);
  end loop;
end
$$;
revoke all on function baton_private.announce(jsonb) from public, anon, authenticated;

-- Work that became claimable: a new pending task, one back in pending (released, re-queued, retried,
-- declined), or one reassigned to another agent. News for the agents involved: every status change
-- and progress report goes to the sender and the holder (and the holder it was taken from).
-- `now_rows` and `old_rows` are the changed rows' routing columns, as JSON.
create function baton_private.announce_changes(now_rows jsonb, old_rows jsonb) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  changes jsonb;
begin
  with r as (
    select n.id, n.status, n.to_agent, n.from_agent, n.claimed_by, n.required_capabilities, n.progress_at, n.not_before,
           o.status as old_status, o.to_agent as old_to_agent, o.claimed_by as old_claimed_by, o.progress_at as old_progress_at
    from jsonb_to_recordset(now_rows) as n (id uuid, status text, to_agent text, from_agent text, claimed_by text,
                                              required_capabilities text[], progress_at timestamptz, not_before timestamptz)
    left join jsonb_to_recordset(old_rows) as o (id uuid, status text, to_agent text, claimed_by text, progress_at timestamptz)
      on o.id = n.id
  ), work as (
    select case when r.to_agent is not null then 'agent:' || r.to_agent
                when cardinality(r.required_capabilities) = 0 then 'tasks:open'
                else 'capability:' || r.required_capabilities[1] end as topic,
           'work' as event, r.id, r.status, r.not_before
    from r
    where r.status = 'pending'
      and (r.old_status is null or r.old_status <> 'pending' or r.to_agent is distinct from r.old_to_agent)
  ), news as (
    select 'agent:' || w.who as topic, 'task' as event, r.id, r.status, null::timestamptz as not_before
    from r
    cross join lateral (select distinct x.who from unnest(array[r.from_agent, r.claimed_by, r.old_claimed_by]) as x (who)) w
    where w.who is not null and r.old_status is not null
      and (r.status <> r.old_status or r.progress_at is distinct from r.old_progress_at)
  )
  select jsonb_agg(jsonb_build_object('topic', m.topic, 'event', m.event, 'task_id', m.id,
                                      'task', jsonb_strip_nulls(jsonb_build_object('id', m.id, 'status', m.status, 'not_before', m.not_before))))
  into changes
  from (select * from work union all select * from news) m;
  if changes is not null then
    perform baton_private.announce(changes);
  end if;
end
$$;
revoke all on function baton_private.announce_changes(jsonb, jsonb) from public, anon, authenticated;

create function baton_private.tg_task_handoffs__announce() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  -- Only the columns that route a message leave the statement: never a payload.
  if tg_op = 'INSERT' then
    perform baton_private.announce_changes(
      (select jsonb_agg(jsonb_build_object('id', c.id, 'status', c.status, 'to_agent', c.to_agent, 'from_agent', c.from_agent,
                                          'claimed_by', c.claimed_by, 'required_capabilities', c.required_capabilities)) from changed c),
      '[]');
  else
    perform baton_private.announce_changes(
      (select jsonb_agg(jsonb_build_object('id', c.id, 'status', c.status, 'to_agent', c.to_agent, 'from_agent', c.from_agent,
                                          'claimed_by', c.claimed_by, 'required_capabilities', c.required_capabilities,
                                          'progress_at', c.progress_at, 'not_before', c.not_before)) from changed c),
      (select jsonb_agg(jsonb_build_object('id', p.id, 'status', p.status, 'to_agent', p.to_agent,
                                          'claimed_by', p.claimed_by, 'progress_at', p.progress_at)) from previous p));
  end if;
  return null;
end
$$;
revoke all on function baton_private.tg_task_handoffs__announce() from public, anon, authenticated;

create trigger announce_created after insert on public.task_handoffs
  referencing new table as changed
  for each statement execute function baton_private.tg_task_handoffs__announce();
create trigger announce_changed after update on public.task_handoffs
  referencing new table as changed old table as previous
  for each statement execute function baton_private.tg_task_handoffs__announce();
