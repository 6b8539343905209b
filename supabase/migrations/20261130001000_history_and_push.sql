-- What follows every insert and change of a task, once per statement: a row of history for each status
-- it took (task_events), the push that wakes the agents who may now act (Realtime broadcast on a topic
-- per agent, capability or open queue), results written back to the sender's inbox, and the release
-- of tasks that waited on it (workflows). Who may listen on which topic is a row-level security policy
-- on realtime.messages.

-- The queue that hears of a task's work: its agent, its first capability, or open work. One rule, an
-- SQL function the planner inlines into both triggers below. A message names at most 100 tasks per
-- topic and event (an ordered aggregate keeps the first 100); a task that leaves not_before = infinity
-- (released by its dependencies) is announced like a new one.
create function baton_private.work_topic(to_agent text, required_capabilities text[]) returns text
language sql immutable parallel safe
as $$
  select case when to_agent is not null then 'agent:' || to_agent
              when cardinality(required_capabilities) = 0 then 'tasks:open'
              else 'capability:' || required_capabilities[1] end
$$;

revoke all on function baton_private.work_topic(text, text[]) from public, anon, authenticated;

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

create function baton_private.tg_task_handoffs__follow_insert() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  actor text := baton_private.event_actor();
  topics text[];
  bodies jsonb[];
begin
  with history as (
    insert into public.task_events (task_id, actor, from_status, to_status, note)
    select c.id, actor, null, c.status, nullif(current_setting('baton.note', true), '')
    from created c
  )
  -- Push: each queue hears of its new tasks, the first 100 in id order. A task that waits for others
  -- is announced when they release it, not before.
  select array_agg(a.topic), array_agg(jsonb_build_object('tasks', to_jsonb(a.tasks[1:100]))) into topics, bodies
  from (
    select baton_private.work_topic(c.to_agent, c.required_capabilities) as topic,
           array_agg(jsonb_strip_nulls(jsonb_build_object('id', c.id, 'status', c.status, 'not_before', c.not_before)) order by c.id) as tasks
    from created c
    where c.status = 'pending' and c.not_before is distinct from 'infinity'::timestamptz
    group by 1
  ) a;
  perform realtime.send(x.body, 'work', x.topic, true) from unnest(bodies, topics) as x (body, topic);
  return null;
end
$$;

revoke all on function baton_private.tg_task_handoffs__follow_insert() from public, anon, authenticated;

create function baton_private.tg_task_handoffs__follow_change() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  actor text := baton_private.event_actor();
  note text := nullif(current_setting('baton.note', true), '');
  topics text[];
  events text[];
  bodies jsonb[];
  ended_ids uuid[];
  ended public.task_handoffs;
begin
  with moved as materialized (
    select n.id, n.status, o.status as was, n.from_agent, n.to_agent, n.claimed_by, o.claimed_by as held_by,
           n.required_capabilities, n.not_before, n.result, n.status_reason,
           n.to_agent is distinct from o.to_agent as readdressed, n.progress_at is distinct from o.progress_at as progressed,
           o.not_before = 'infinity'::timestamptz and n.not_before is distinct from o.not_before as released
    from changed n join previous o on o.id = n.id
    where n.status is distinct from o.status or n.progress_at is distinct from o.progress_at
       or n.to_agent is distinct from o.to_agent
       or (o.not_before = 'infinity'::timestamptz and n.not_before is distinct from o.not_before)
  ), history as (
    -- The history: one event per status change.
    insert into public.task_events (task_id, actor, from_status, to_status, note)
    select m.id, actor, m.was, m.status, note from moved m where m.status <> m.was
  ), results as (
    -- The sender hears of every outcome it did not cause itself.
    insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
    select coalesce(m.claimed_by, m.to_agent, m.from_agent), m.from_agent, m.id, 'result',
           jsonb_strip_nulls(jsonb_build_object('status', m.status, 'result', m.result, 'reason', m.status_reason))
    from moved m
    where m.status in ('completed', 'failed', 'rejected', 'cancelled') and m.status <> m.was
      and actor is distinct from m.from_agent
  )
  -- Push: per topic and event, the first 100 tasks in id order (id, status, not_before).
  select array_agg(a.topic), array_agg(a.event), array_agg(jsonb_build_object('tasks', to_jsonb(a.tasks[1:100]))),
         (select array_agg(m.id) from moved m where m.status in ('completed', 'failed', 'rejected', 'cancelled') and m.status <> m.was)
  into topics, events, bodies, ended_ids
  from (
    select u.topic, u.event,
           array_agg(jsonb_strip_nulls(jsonb_build_object('id', u.id, 'status', u.status, 'not_before', u.not_before)) order by u.id) as tasks
    from (
      -- Work for whoever may claim it: a task that became pending, pending for someone else, or no
      -- longer waiting for the tasks it depends on.
      select baton_private.work_topic(m.to_agent, m.required_capabilities) as topic, 'work' as event, m.id, m.status, m.not_before
      from moved m
      where m.status = 'pending' and (m.was <> 'pending' or m.readdressed or m.released)
        and m.not_before is distinct from 'infinity'::timestamptz
      union all
      -- News of a task for its sender and its holders, old and new, each named once.
      select 'agent:' || w.who, 'task', m.id, m.status, null
      from moved m
      cross join lateral unnest(array[
        m.from_agent,
        case when m.claimed_by <> m.from_agent then m.claimed_by end,
        case when m.held_by <> m.from_agent and m.held_by is distinct from m.claimed_by then m.held_by end]) as w (who)
      where w.who is not null and (m.status <> m.was or m.progressed)
    ) u
    group by u.topic, u.event
  ) a;
  perform realtime.send(x.body, x.event, x.topic, true) from unnest(bodies, events, topics) as x (body, event, topic);
  -- What waits on the tasks that ended moves, as release_dependents did: the GIN index on depends_on
  -- says which of them anything waits for (usually none). Their updates run through this trigger in turn.
  if ended_ids is not null then
    for ended in
      select n.* from changed n
      where n.id in (select x.depends_on_id from baton_private.dependents_of(ended_ids) x)
      order by n.id
    loop
      perform baton_private.release_dependents_of(ended);
    end loop;
  end if;
  return null;
end
$$;

revoke all on function baton_private.tg_task_handoffs__follow_change() from public, anon, authenticated;

create trigger follow_change after update on public.task_handoffs
  referencing old table as previous new table as changed
  for each statement execute function baton_private.tg_task_handoffs__follow_change();

create trigger follow_insert after insert on public.task_handoffs
  referencing new table as created
  for each statement execute function baton_private.tg_task_handoffs__follow_insert();

create policy "Agents can listen on their own topic, their capabilities' topics and open work"
  on realtime.messages for select to authenticated
  using (realtime.messages.extension = 'broadcast' and baton_private.may_listen(realtime.topic()));
