-- What follows a change of tasks, in one statement trigger instead of four; and a result message
-- without the row trigger that stamps the messages agents write.
--
-- After each UPDATE of task_handoffs, four statement triggers each joined the statement's old and new
-- rows and ran queries of their own: announce_changed sent the push announcements, notify_sender wrote
-- the result messages, record_changed the history, release_dependents moved what waited on the tasks
-- that ended. A claim and a report of ten tasks are two such statements. In a profile of the worker's
-- backend on a claim-and-report loop (report_and_claim, 10 per call, perf, 2,060 samples), those
-- triggers' hash joins were 4.5 % of its CPU and the executor's start of their queries 3.8 %.
--
-- follow_change does the same in one query and one trigger call: the rows that moved are joined once,
-- the actor and the note are read once, and history, messages, announcements and the ended tasks come
-- from that one set. Then, as release_dependents did, it moves what waits on the tasks that ended. What
-- is written and sent, and in what order, is unchanged. For hand-offs, record_created and
-- announce_created become follow_insert in the same way.
--
-- The push news names each task's sender and holders once with a CASE over the three instead of a
-- DISTINCT over an array, which built a hash table per row.
--
-- Twelve interleaved pairs of runs of 2,000 tasks on that loop, after …2000_result_checks.sql: 0.05 ms
-- less Postgres CPU per task, median of the pairs (of 1.09; the machine was slower than for the
-- measure in that file). Both changes together, sixteen pairs: 0.115 ms less, every pair lower.

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
           n.to_agent is distinct from o.to_agent as readdressed, n.progress_at is distinct from o.progress_at as progressed
    from changed n join previous o on o.id = n.id
    where n.status is distinct from o.status or n.progress_at is distinct from o.progress_at
       or n.to_agent is distinct from o.to_agent
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
  -- Push: per topic and event, the tasks (id, status, not_before), at most 100, in id order.
  select array_agg(a.topic), array_agg(a.event), array_agg(jsonb_build_object('tasks', a.tasks)),
         (select array_agg(m.id) from moved m where m.status in ('completed', 'failed', 'rejected', 'cancelled') and m.status <> m.was)
  into topics, events, bodies, ended_ids
  from (
    select u.topic, u.event,
           jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', u.id, 'status', u.status, 'not_before', u.not_before)) order by u.id) as tasks
    from (select v.*, row_number() over (partition by v.topic, v.event order by v.id) as nth from (
      -- Work for whoever may claim it: a task that became pending, or pending for someone else.
      select case when m.to_agent is not null then 'agent:' || m.to_agent
                  when cardinality(m.required_capabilities) = 0 then 'tasks:open'
                  else 'capability:' || m.required_capabilities[1] end as topic,
             'work' as event, m.id, m.status, m.not_before
      from moved m
      where m.status = 'pending' and (m.was <> 'pending' or m.readdressed)
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
    ) v) u
    where u.nth <= 100
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
  -- Push: each queue hears of its new tasks, at most 100 per message. A task that waits for others
  -- is announced when they release it, not before.
  select array_agg(a.topic), array_agg(jsonb_build_object('tasks', a.tasks)) into topics, bodies
  from (
    select m.topic, jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', m.id, 'status', m.status, 'not_before', m.not_before)) order by m.id) as tasks
    from (
      select c.id, c.status, c.not_before, t.topic, row_number() over (partition by t.topic order by c.id) as nth
      from created c
      cross join lateral (select case when c.to_agent is not null then 'agent:' || c.to_agent
                                      when cardinality(c.required_capabilities) = 0 then 'tasks:open'
                                      else 'capability:' || c.required_capabilities[1] end as topic) t
      where c.status = 'pending' and c.not_before is distinct from 'infinity'::timestamptz
    ) m
    where m.nth <= 100
    group by m.topic
  ) a;
  perform realtime.send(x.body, 'work', x.topic, true) from unnest(bodies, topics) as x (body, topic);
  return null;
end
$$;


drop trigger announce_changed on public.task_handoffs;
drop trigger notify_sender on public.task_handoffs;
drop trigger record_changed on public.task_handoffs;
drop trigger release_dependents on public.task_handoffs;
drop trigger announce_created on public.task_handoffs;
drop trigger record_created on public.task_handoffs;
drop function baton_private.tg_task_handoffs__announce_changed();
drop function baton_private.tg_task_handoffs__notify_sender();
drop function baton_private.tg_task_handoffs__record_changed();
drop function baton_private.tg_task_handoffs__release_dependents();
drop function baton_private.tg_task_handoffs__announce_created();
drop function baton_private.tg_task_handoffs__record_created();

create trigger follow_change after update on public.task_handoffs
  referencing old table as previous new table as changed
  for each statement execute function baton_private.tg_task_handoffs__follow_change();
create trigger follow_insert after insert on public.task_handoffs
  referencing new table as created
  for each statement execute function baton_private.tg_task_handoffs__follow_insert();

revoke all on function baton_private.tg_task_handoffs__follow_change() from public, anon, authenticated;
revoke all on function baton_private.tg_task_handoffs__follow_insert() from public, anon, authenticated;

-- Result messages are written only by follow_change (an agent may insert notes alone, by the policy of
-- …0600_hardening.sql), with the default time and unread. The row trigger that stamps the time and
-- the read mark of what agents write, and keeps a sent message unchanged, no longer runs for their
-- insert (1.5 % of the profile above); it still runs for every update, theirs included.
drop trigger validate on public.agent_messages;
create trigger validate before insert on public.agent_messages
  for each row when (new.kind <> 'result') execute function baton_private.tg_agent_messages__validate();
create trigger validate_change before update on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__validate();
