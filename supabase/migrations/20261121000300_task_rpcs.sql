-- The only way agents change tasks: each function checks who is calling and what they may do, then
-- makes one status change that the transition trigger checks again and records.

-- "Not found" for a task the caller may not see: its existence is not leaked.
create function baton_private.task_not_found(p_task_id uuid, agent text) returns void
language plpgsql set search_path = ''
as $$
begin
  raise exception 'no task % that agent "%" can see', p_task_id, agent
    using errcode = 'BT002', hint = 'Check the id: baton tasks --all lists the tasks you can see.';
end
$$;

-- The task, if the caller may see it.
create function baton_private.visible_task(p_task_id uuid, agent text) returns public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  t public.task_handoffs;
begin
  select * into t from public.task_handoffs where id = p_task_id;
  if not found or not baton_private.can_see_task(t, agent) then
    perform baton_private.task_not_found(p_task_id, agent);
  end if;
  return t;
end
$$;

-- The same, locked for a change.
create function baton_private.lock_task(p_task_id uuid, agent text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  t public.task_handoffs;
begin
  select * into t from public.task_handoffs where id = p_task_id for update;
  if not found or not baton_private.can_see_task(t, agent) then
    perform baton_private.task_not_found(p_task_id, agent);
  end if;
  return t;
end
$$;

-- Locks the agent's row, so that concurrent claims by one agent count its load one at a time.
create function baton_private.free_capacity(agent text) returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  cap integer;
  held integer;
begin
  select a.max_concurrent into cap from public.agents a where a.id = agent for update;
  select count(*) into held from public.task_handoffs t
  where t.claimed_by = agent and t.status in ('claimed', 'in_progress', 'input_required');
  return greatest(cap - held, 0);
end
$$;

-- A lease asked for at claim time; null leaves it to the task's lease_seconds or the default.
create function baton_private.lease_for(p_lease_seconds integer) returns interval
language plpgsql stable set search_path = ''
as $$
begin
  if p_lease_seconds is null then
    return null;
  end if;
  perform baton_private.check_lease(p_lease_seconds);
  return make_interval(secs => p_lease_seconds);
end
$$;

-- The caller must hold the task under the claim it presents.
create function baton_private.check_holder(t public.task_handoffs, agent text, p_claim_token uuid) returns void
language plpgsql stable set search_path = ''
as $$
begin
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    raise exception 'task % is already %', t.id, t.status
      using errcode = 'BT001', hint = 'A final task cannot change; hand off a new one if work remains.';
  end if;
  if t.claimed_by is distinct from agent then
    raise exception 'task % is %, and agent "%" does not hold it', t.id,
      case when t.claimed_by is null then t.status::text else format('held by "%s"', t.claimed_by) end, agent
      using errcode = 'BT003', hint = 'Only the agent holding a task can report on it; claim it first.';
  end if;
  if p_claim_token is distinct from t.claim_token then
    raise exception 'the claim presented for task % is no longer current', t.id
      using errcode = 'BT007',
            hint = 'The task was released or re-claimed since that claim; drop this outcome.';
  end if;
end
$$;

-- Exponential backoff with jitter: base * 2^(attempt - 1), capped, then scaled by 0.75 to 1.25.
create function baton_private.retry_delay(attempt integer) returns interval
language sql volatile set search_path = ''
as $$
  select least(s.retry_base_delay * power(2, greatest(attempt - 1, 0)), s.retry_max_delay) * (0.75 + random() * 0.5)
  from public.baton_settings s where s.id
$$;

-- A reason, question or answer that must say something.
create function baton_private.require_text(value text, what text, hint text) returns void
language plpgsql immutable set search_path = ''
as $$
begin
  if value is null or btrim(value) = '' then
    raise exception '% cannot be empty', what using errcode = 'BT005', hint = hint;
  end if;
end
$$;

create function baton_private.set_note(note text) returns void
language sql set search_path = ''
as $$ select set_config('baton.note', coalesce(note, ''), true) $$;

-- The one place a claim is made: the caller has locked the rows and checked the agent may take them.
create function baton_private.mark_claimed(ids uuid[], agent text, lease interval, start boolean) returns void
language plpgsql set search_path = ''
as $$
begin
  update public.task_handoffs
  set status = 'claimed', claimed_by = agent, claim_token = gen_random_uuid(), attempts = attempts + 1,
      not_before = null,
      lease_expires_at = now() + coalesce(lease, make_interval(secs => lease_seconds), (baton_private.settings()).default_lease)
  where id = any (ids);
  if start then
    update public.task_handoffs set status = 'in_progress' where id = any (ids);
  end if;
end
$$;

-- Hand-off --------------------------------------------------------------------------------------------

create function public.handoff_task(
  p_title text,
  p_to_agent text default null,
  p_description text default null,
  p_priority public.task_priority default 'medium',
  p_payload jsonb default '{}',
  p_required_capabilities text[] default '{}',
  p_deadline timestamptz default null,
  p_max_attempts integer default 3,
  p_parent_task_id uuid default null,
  p_idempotency_key text default null,
  p_allow_offline boolean default true,
  p_lease_seconds integer default null,
  p_expected_outputs jsonb default '[]',
  p_input_artifacts jsonb default '[]'
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs;
  parent public.task_handoffs;
  target public.agents;
begin
  if p_to_agent is not null then
    select * into target from public.agents a where a.id = p_to_agent;
    if not found then
      raise exception 'no agent named "%"', p_to_agent
        using errcode = 'BT002', hint = 'See who is registered: baton discover --all.';
    end if;
    if not coalesce(p_allow_offline, true) and not baton_private.is_online(target) then
      raise exception 'agent "%" is offline (last heartbeat: %)', p_to_agent, coalesce(target.last_heartbeat::text, 'never')
        using errcode = 'BT011',
              hint = 'Queue it anyway with allow-offline (baton handoff --allow-offline), or pick an online agent: baton discover.';
    end if;
  end if;
  if p_parent_task_id is not null then
    parent := baton_private.visible_task(p_parent_task_id, me);
    if parent.claimed_by is distinct from me and parent.from_agent <> me then
      raise exception 'only the holder or the sender of task % can hand off work within it', p_parent_task_id
        using errcode = 'BT003', hint = 'Hand it off without a parent, or claim the parent first.';
    end if;
  end if;
  perform baton_private.check_inputs(coalesce(p_input_artifacts, '[]'), me);
  if p_idempotency_key is not null then
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
    if found then
      return t;
    end if;
  end if;

  insert into public.task_handoffs (
    from_agent, to_agent, title, description, priority, payload, required_capabilities,
    deadline, max_attempts, parent_task_id, idempotency_key, lease_seconds, expected_outputs, input_artifacts
  ) values (
    me, p_to_agent, p_title, p_description, coalesce(p_priority, 'medium'), coalesce(p_payload, '{}'),
    coalesce(p_required_capabilities, '{}'), p_deadline, coalesce(p_max_attempts, 3), p_parent_task_id,
    p_idempotency_key, p_lease_seconds, coalesce(p_expected_outputs, '[]'), coalesce(p_input_artifacts, '[]')
  )
  on conflict (from_agent, idempotency_key) do nothing
  returning * into t;

  if t.id is null then
    -- A concurrent hand-off with the same key won; return its task.
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
  end if;
  return t;
end
$$;
comment on function public.handoff_task is 'Hands off a task as the calling agent: to p_to_agent, or to every agent holding p_required_capabilities when p_to_agent is null. With p_allow_offline = false an offline addressee is refused (BT011).';

-- Claims ----------------------------------------------------------------------------------------------

create function public.claim_task(
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
  if free < 1 then
    raise exception 'agent "%" already holds as many tasks as its max_concurrent allows', me
      using errcode = 'BT008', hint = 'Finish or release a task first, or raise max_concurrent.';
  end if;

  perform baton_private.mark_claimed(array[t.id], me, lease, p_start);
  select * into t from public.task_handoffs where id = t.id;
  return t;
end
$$;
comment on function public.claim_task is 'Claims one task for the calling agent (and starts it with p_start). Of agents racing for a task exactly one wins; the others get BT004.';

create function public.claim_next_tasks(
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
  wanted := least(p_limit, baton_private.free_capacity(me));
  if wanted < 1 then
    return;
  end if;
  mine := baton_private.agent_capabilities(me);

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
comment on function public.claim_next_tasks is 'Claims up to p_limit tasks (never beyond the agent''s free capacity): addressed ones first, then broadcasts it can do, highest priority then oldest. Concurrent callers never get the same task.';

create function public.start_task(p_task_id uuid, p_claim_token uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  if t.status <> 'claimed' then
    raise exception 'task % is %; only a claimed task can be started', t.id, t.status
      using errcode = 'BT001', hint = 'It is already under way.';
  end if;
  update public.task_handoffs set status = 'in_progress' where id = t.id returning * into t;
  return t;
end
$$;
comment on function public.start_task is 'The holder starts a claimed task.';

create function public.complete_task(p_task_id uuid, p_claim_token uuid, p_result jsonb default '{"status": "success"}')
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  missing text;
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  if t.status <> 'in_progress' then
    raise exception 'task % is %; only a task in progress can be completed', t.id, t.status
      using errcode = 'BT001',
            hint = case when t.status = 'claimed' then 'Start it first (baton start <task>).'
                        else 'Wait for the sender''s answer before completing it.' end;
  end if;
  select string_agg(e ->> 'name', ', ' order by e ->> 'name') into missing
  from jsonb_array_elements(t.expected_outputs) e
  where coalesce((e ->> 'required')::boolean, true)
    and not exists (select from public.task_artifacts a where a.task_id = t.id and a.name = e ->> 'name');
  if missing is not null then
    raise exception 'task % is missing required outputs: %', t.id, missing
      using errcode = 'BT012', hint = 'Attach them first (baton complete <task> --artifact name=@file).';
  end if;
  update public.task_handoffs
  set status = 'completed', result = coalesce(p_result, '{"status": "success"}'), status_reason = null, problems = null
  where id = t.id returning * into t;
  if t.result ? 'handoff' then
    perform baton_private.create_follow_up(t, t.result -> 'handoff', me);
  end if;
  return t;
end
$$;
comment on function public.complete_task is 'The holder completes a task in progress with its result; the claim token must be current and every required expected output attached (else BT012). A result.handoff creates the follow-up task in the same transaction.';

create function public.fail_task(
  p_task_id uuid,
  p_claim_token uuid,
  p_error text,
  p_retry boolean default false,
  p_problems jsonb default null
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  perform baton_private.require_text(p_error, 'the reason for a failure', 'Say what went wrong, in one line.');
  if t.status <> 'in_progress' then
    raise exception 'task % is %; only a task in progress can fail', t.id, t.status
      using errcode = 'BT001', hint = 'Release a claimed task instead (baton release <task>).';
  end if;
  if p_retry and t.attempts < t.max_attempts then
    perform baton_private.set_note(format('retry after attempt %s of %s: %s', t.attempts, t.max_attempts, p_error));
    update public.task_handoffs
    set status = 'pending', status_reason = p_error, problems = p_problems, not_before = now() + baton_private.retry_delay(t.attempts)
    where id = t.id returning * into t;
  else
    perform baton_private.set_note(case when p_retry then format('out of attempts (%s of %s): %s', t.attempts, t.max_attempts, p_error) else p_error end);
    update public.task_handoffs set status = 'failed', status_reason = p_error, problems = p_problems
    where id = t.id returning * into t;
  end if;
  perform baton_private.set_note(null);
  return t;
end
$$;
comment on function public.fail_task is 'The holder reports failure. With p_retry the task goes back to pending while attempts remain; otherwise it fails for good.';

create function public.release_task(p_task_id uuid, p_claim_token uuid, p_reason text default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; only a claimed or running task can be released', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer, then release it.';
  end if;
  perform baton_private.set_note(coalesce(p_reason, 'released by the holder'));
  -- Handing a task back is not a failed attempt.
  update public.task_handoffs set status = 'pending', attempts = greatest(attempts - 1, 0)
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;
comment on function public.release_task is 'The holder hands a task back to pending, for another agent or later; the attempt does not count.';

-- Sender and addressee --------------------------------------------------------------------------------

create function public.reject_task(p_task_id uuid, p_reason text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.to_agent is distinct from me then
    raise exception 'only the addressee can reject task %', t.id
      using errcode = 'BT003',
            hint = case when t.to_agent is null then 'A broadcast is not rejected by one agent; leave it for another.'
                        else format('It is addressed to "%s".', t.to_agent) end;
  end if;
  perform baton_private.require_text(p_reason, 'the reason for a rejection', 'Tell the sender why, in one line.');
  if t.status <> 'pending' then
    raise exception 'task % is %; only pending tasks can be rejected', t.id, t.status
      using errcode = 'BT001', hint = 'Release or fail a task you already claimed.';
  end if;
  perform baton_private.set_note(p_reason);
  update public.task_handoffs set status = 'rejected', status_reason = p_reason
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;
comment on function public.reject_task is 'The addressee declines a pending task, with a reason.';

create function public.cancel_task(p_task_id uuid, p_reason text default null) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can cancel task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Ask the sender, or release the task if you hold it.';
  end if;
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    raise exception 'task % is already %; it cannot be cancelled', t.id, t.status
      using errcode = 'BT001', hint = 'A final task cannot change.';
  end if;
  perform baton_private.set_note(coalesce(p_reason, 'cancelled by the sender'));
  update public.task_handoffs set status = 'cancelled', status_reason = p_reason
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;
comment on function public.cancel_task is 'The sender withdraws a task that is not final.';

-- Only agents call these; the operator's service role works on the tables directly.
revoke all on function
  public.handoff_task, public.claim_task, public.claim_next_tasks, public.start_task, public.complete_task,
  public.fail_task, public.release_task, public.reject_task, public.cancel_task
  from public, anon;
grant execute on function
  public.handoff_task, public.claim_task, public.claim_next_tasks, public.start_task, public.complete_task,
  public.fail_task, public.release_task, public.reject_task, public.cancel_task
  to authenticated;
