-- Push spares the agent whose call made a change (issue 71): a task's news went to its sender and its
-- holders alike, the holder hearing of its own claim, start and completion, the sender of its own
-- cancel. On a hosted project every message counts against the plan's messages per second (each one
-- sent and each one delivered), and a task's life was some seven messages; the ones nobody needs are
-- three of them. Who else made the change (the sender cancelling, an answer, the sweep re-queuing, an
-- operator) is still heard of by every one concerned.

create or replace function baton_private.tg_task_handoffs__follow_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
      -- News of a task for its sender and its holders, old and new, each named once, but not for the
      -- agent whose call made the change: it knows.
      select 'agent:' || w.who, 'task', m.id, m.status, null
      from moved m
      cross join lateral unnest(array[
        m.from_agent,
        case when m.claimed_by <> m.from_agent then m.claimed_by end,
        case when m.held_by <> m.from_agent and m.held_by is distinct from m.claimed_by then m.held_by end]) as w (who)
      where w.who is not null and w.who is distinct from actor and (m.status <> m.was or m.progressed)
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
$function$
;
