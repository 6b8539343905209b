-- Nothing one agent sends can hurt another agent or the record: one lock order, chain visibility that
-- follows the caller's current rights, conversation kinds only the database writes, bounded notes, the
-- retry backoff honoured by every claim, and internals no API role can execute.

-- One lock order -------------------------------------------------------------------------------------
-- Every RPC locks the caller's agents row (if at all) before any task, and only FOR NO KEY UPDATE: that
-- still serializes one agent's claims, but no longer conflicts with the KEY SHARE lock a foreign key
-- takes when another agent's call, holding a task lock, writes a message or a task naming this agent.
create or replace function baton_private.free_capacity(agent text) returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  cap integer;
  held integer;
begin
  select a.max_concurrent into cap from public.agents a where a.id = agent for no key update;
  select count(*) into held from public.task_handoffs t
  where t.claimed_by = agent and t.status in ('claimed', 'in_progress', 'input_required');
  return greatest(cap - held, 0);
end
$$;

-- claim_task as before, less tasks still backing off after a failure (not_before).
create or replace function public.claim_task(
  p_task_id uuid,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  free integer := baton_private.free_capacity(me);
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.to_agent is not null and t.to_agent <> me then
    raise exception 'task % is addressed to "%"; only that agent can claim it', t.id, t.to_agent
      using errcode = 'BT003', hint = 'Ask its sender to reassign it, or claim a task addressed to you.';
  end if;
  if t.to_agent is null and not t.required_capabilities <@ baton_private.agent_capabilities(me) then
    raise exception 'task % needs capabilities % that agent "%" lacks', t.id,
      array_to_string(t.required_capabilities, ', '), me
      using errcode = 'BT003', hint = 'Only agents holding every required capability can claim a broadcast.';
  end if;
  if t.status in ('claimed', 'in_progress', 'input_required') then
    raise exception 'task % is already claimed by "%"', t.id, t.claimed_by
      using errcode = 'BT004', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.status <> 'pending' then
    raise exception 'task % is %; only pending tasks can be claimed', t.id, t.status
      using errcode = 'BT001', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.not_before > now() then
    raise exception 'task % is backing off after a failure until %', t.id, t.not_before
      using errcode = 'BT014',
            hint = format('Claim it again in %s s.', greatest(ceil(extract(epoch from t.not_before - now())), 1));
  end if;
  if free < 1 then
    raise exception 'agent "%" already holds as many tasks as its max_concurrent allows', me
      using errcode = 'BT008', hint = 'Finish or release a task first, or raise max_concurrent.';
  end if;

  perform baton_private.mark_claimed(array[t.id], me, lease, p_start);
  select * into t from public.task_handoffs where id = t.id;
  return t;
end
$$;

-- Chain visibility -----------------------------------------------------------------------------------
-- Whoever works on a task (its addressee, its holder, or a capable claimer of a broadcast) needs its
-- chain as context. Its sender does not: a sender sees the chain only where it may see each task itself,
-- so a holder that planted a child and was then moved off the parent stops seeing the parent at once.
create function baton_private.works_on(t public.task_handoffs, agent text) returns boolean
language sql stable set search_path = ''
as $$
  select coalesce(
    t.claimed_by = agent or t.to_agent = agent
    or (t.to_agent is null and t.required_capabilities <@ baton_private.agent_capabilities(agent)),
    false)
$$;

create or replace function public.task_ancestors(p_task_id uuid) returns setof public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  worker boolean := baton_private.works_on(t, me);
begin
  return query
    select p.* from baton_private.ancestor_ids(t.id) c join public.task_handoffs p on p.id = c.id
    where worker or baton_private.can_see_task(p, me)
    order by c.distance;
end
$$;
comment on function public.task_ancestors is 'The tasks a task was handed off within, nearest first: all of them for whoever works on the task, else those the caller may see itself.';

create or replace function public.task_inputs(p_task_id uuid) returns setof public.task_artifacts
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  worker boolean := baton_private.works_on(t, me);
begin
  return query
    select a.* from public.task_artifacts a join public.task_handoffs s on s.id = a.task_id
    where (a.task_id in (select c.id from baton_private.ancestor_ids(t.id) c)
           or exists (
             select from jsonb_array_elements(t.input_artifacts) i
             where (i ->> 'task_id')::uuid = a.task_id and i ->> 'name' = a.name
           ))
      and (worker or baton_private.can_see_task(s, me))
    order by a.created_at;
end
$$;
comment on function public.task_inputs is 'The artifacts a task works from (its named inputs and its parent chain''s): all of them for whoever works on the task, else those on tasks the caller may see itself.';

-- The chain of a task: the tasks the caller may see itself, everything the task led to (work done on its
-- behalf), and, for whoever works on it, its ancestors.
create or replace function public.task_chain(p_task_id uuid) returns setof public.task_lineage
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  context uuid[];
begin
  with recursive below (id) as (
    select t.id
    union all
    select c.id from public.task_handoffs c join below b on c.parent_task_id = b.id
  )
  select array(select id from below) into context;
  if baton_private.works_on(t, me) then
    context := context || array(select c.id from baton_private.ancestor_ids(t.id) c);
  end if;
  return query
    select l.* from public.task_lineage l join public.task_handoffs s on s.id = l.id
    where l.root_task_id = t.root_task_id and (s.id = any (context) or baton_private.can_see_task(s, me))
    order by l.depth, l.created_at;
end
$$;
comment on function public.task_chain is 'The chain of a task the caller may see, as task_lineage rows: what the task led to, the tasks the caller may see itself, and the ancestors of a task it works on.';

-- The conversation ------------------------------------------------------------------------------------
-- Progress, questions, answers and results are written by the RPCs and triggers, never by an agent
-- directly; an agent writes notes.
drop policy "Agents can send messages only as themselves, on tasks they can view" on public.agent_messages;
create policy "Agents can send notes only as themselves, on tasks they can view" on public.agent_messages
  for insert to authenticated
  with check (
    kind = 'note'
    and from_agent = (select baton_private.current_agent_id())
    and (task_id is null or exists (select from public.task_handoffs t where t.id = task_id))
    and (reply_to_id is null or baton_private.can_see_message(reply_to_id, (select baton_private.current_agent_id())))
  );

-- The answer replies to the holder's own question, the newest one it asked.
create or replace function public.answer_question(p_task_id uuid, p_answer text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  question uuid;
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can answer questions on task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Send a message to the holder instead.';
  end if;
  perform baton_private.require_text(p_answer, 'an answer', 'Give the holder what it asked for.');
  if t.status <> 'input_required' then
    raise exception 'task % is %; there is no open question to answer', t.id, t.status
      using errcode = 'BT001', hint = 'Send a message instead: baton message <agent> <text> --task <task>.';
  end if;
  select m.id into question from public.agent_messages m
  where m.task_id = t.id and m.kind = 'question' and m.from_agent = t.claimed_by
  order by m.created_at desc limit 1;
  perform baton_private.set_note('answered');
  -- The wait did not use up the holder's lease: it starts afresh with the work.
  update public.task_handoffs
  set status = 'in_progress', status_reason = null,
      lease_expires_at = now() + coalesce(t.claim_lease, make_interval(secs => t.lease_seconds), (baton_private.settings()).default_lease)
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  insert into public.agent_messages (from_agent, to_agent, task_id, reply_to_id, kind, body)
  values (me, t.claimed_by, t.id, question, 'answer', jsonb_build_object('text', p_answer));
  return t;
end
$$;

-- Bounded notes ---------------------------------------------------------------------------------------
-- Every reason reaches task_events.note through here; the history keeps the first 2,000 characters.
create or replace function baton_private.set_note(note text) returns void
language sql set search_path = ''
as $$ select set_config('baton.note', left(coalesce(note, ''), 2000), true) $$;

-- Internals stay internal ----------------------------------------------------------------------------
-- Postgres grants EXECUTE on every new function to PUBLIC, and a schema's default privileges cannot take
-- that back. So: revoke it from everything in baton_private now, grant back only what row-level
-- security, validation triggers and the pre-request check call as the requesting role, and revoke it
-- again whenever a function is created there later (an event trigger, where the database allows one;
-- test/privileges.test.ts checks every function either way).
revoke execute on all functions in schema baton_private from public, anon, authenticated;
grant execute on function
  baton_private.current_agent_id(),
  baton_private.agent_capabilities(text),
  baton_private.can_see_message(uuid, text),
  baton_private.is_slug(text),
  baton_private.is_artifact_name(text),
  baton_private.check_expected_outputs(jsonb),
  baton_private.check_result(jsonb),
  baton_private.check_lease(integer),
  baton_private.check_json_shape(jsonb, text),
  baton_private.is_online(public.agents),
  baton_private.check_request()
  to anon, authenticated, service_role;

create function baton_private.tg_revoke_public_execute() returns event_trigger
language plpgsql set search_path = ''
as $$
declare
  created record;
begin
  for created in
    select c.object_identity from pg_catalog.pg_event_trigger_ddl_commands() c
    where c.object_type in ('function', 'procedure') and c.schema_name = 'baton_private'
  loop
    execute format('revoke execute on routine %s from public', created.object_identity);
  end loop;
end
$$;
revoke execute on function baton_private.tg_revoke_public_execute() from public;

do $$
begin
  create event trigger baton_private_functions_are_private on ddl_command_end
    when tag in ('CREATE FUNCTION', 'CREATE PROCEDURE')
    execute function baton_private.tg_revoke_public_execute();
exception when insufficient_privilege then
  raise notice 'baton: no event trigger (not a superuser here); functions added to baton_private later must revoke PUBLIC execute themselves';
end
$$;
