-- Two answers that sent people the wrong way (issue 49):
--
-- 1. A caller with the anon key alone (curl without an agent token) got Postgres's bare "permission
--    denied for function handoff_task". The request check now says what to send instead, for Baton's
--    own RPCs only.
-- 2. Retrying a failed task left the tasks that were cancelled because it failed (a workflow's later
--    steps) cancelled, and nothing said so. retry_task() now brings them back, waiting on the new
--    attempt, each as a retry of its own.

create or replace function baton_private.check_request() returns void
language plpgsql volatile security definer set search_path = ''
as $$
declare
  claims jsonb := auth.jwt();
  agent text := claims ->> 'agent_id';
  token_id text := claims ->> 'jti';
  token_found boolean := false;
  token_revoked_at timestamptz;
  token_expires_at timestamptz;
  beat_due boolean := false;
  method text := current_setting('request.method', true);
  relation text := split_part(ltrim(coalesce(current_setting('request.path', true), ''), '/'), '/', 1);
  writes boolean := method in ('POST', 'PATCH', 'PUT', 'DELETE');
  served boolean := false;
  hint text;
  fn text;
begin
  -- RPCs (most requests) check their caller themselves; only a relation's path is looked up.
  if relation <> 'rpc' then
    served := relation = any (baton_private.baton_relations());
  end if;
  if served then
    -- A view is never written, by anyone: it shows what the RPCs change.
    if writes then
      if (select c.relkind from pg_catalog.pg_class c where c.oid = pg_catalog.to_regclass('public.' || quote_ident(relation))) = 'v' then
        raise exception '% is a view; it cannot be written', relation
          using errcode = '42501', hint = 'Views show what the RPCs change: change the tasks through their RPCs (rpc/claim_task, rpc/complete_task, rpc/cancel_task, ...).';
      end if;
    end if;
    -- Only an agent's token (or the operator's service role) reaches Baton's relations: neither the anon
    -- key nor a token of some other sign-in on the same project, which Baton never issued.
    if agent is null and coalesce(claims ->> 'role', 'anon') in ('anon', 'authenticated') then
      raise exception '%', case when claims ->> 'role' = 'authenticated'
                                then format('a token without an agent_id cannot read or write %s', relation)
                                else format('the anon key alone cannot read or write %s', relation) end
        using errcode = '42501',
              hint = 'Act as an agent: send its token as Authorization: Bearer $BATON_AGENT_TOKEN (baton agent create <id> prints one), with the anon key as apikey.';
    end if;
  end if;
  -- The anon key alone calls none of Baton's RPCs. Say so, and how to act as an agent, instead of
  -- Postgres's bare "permission denied for function". Only Baton's own entry points are judged (a
  -- public function that anon may not run, with Baton's function of the same name behind it): other
  -- apps on the same project keep their own answers.
  if agent is null and relation = 'rpc' and coalesce(claims ->> 'role', 'anon') = 'anon' then
    fn := split_part(ltrim(coalesce(current_setting('request.path', true), ''), '/'), '/', 2);
    if exists (select from pg_catalog.pg_proc p where p.pronamespace = 'baton_private'::regnamespace and p.proname = fn)
       and exists (select from pg_catalog.pg_proc p
                   where p.pronamespace = 'public'::regnamespace and p.proname = fn
                     and not pg_catalog.has_function_privilege('anon', p.oid, 'execute')) then
      raise exception 'the anon key alone cannot call %', fn
        using errcode = '42501',
              hint = 'Act as an agent: send its token as Authorization: Bearer $BATON_AGENT_TOKEN (baton agent create <id> prints one), with the anon key as apikey.';
    end if;
  end if;
  if agent is null then
    return;
  end if;
  if token_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    select true, t.revoked_at, t.expires_at, baton_private.beat_due(a.last_heartbeat, a.is_active)
      into token_found, token_revoked_at, token_expires_at, beat_due
    from public.agent_tokens t left join public.agents a on a.id = t.agent_id
    where t.id = token_id::uuid and t.agent_id = agent;
  end if;
  if not coalesce(token_found, false) then
    raise exception 'the token for agent "%" was never issued by this project', agent
      using errcode = 'BT006', hint = 'Use a token printed by baton agent create or baton agent token.';
  elsif token_revoked_at is not null then
    raise exception 'the token for agent "%" was revoked at %', agent, token_revoked_at
      using errcode = 'BT006', hint = 'Ask an operator for a new token: baton agent token <id>.';
  elsif token_expires_at <= now() then
    raise exception 'the token for agent "%" expired at %', agent, token_expires_at
      using errcode = 'BT006', hint = 'Ask an operator for a new token: baton agent token <id>.';
  end if;

  if writes and served then
    hint := baton_private.rest_write_hint(relation, method);
    if hint is not null then
      raise exception 'agents do not % % rows directly', lower(method), relation
        using errcode = '42501', hint = hint;
    end if;
  end if;

  if beat_due and current_setting('transaction_read_only') = 'off' then
    perform baton_private.record_beat(agent);
  end if;
end
$$;

create or replace function baton_private.retry_task(p_task_id uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  old public.task_handoffs;
  parent public.task_handoffs;
  already uuid;
  t public.task_handoffs;
  wave uuid[];
  fallen uuid[] := '{}';
  was uuid[];
  made uuid[];
  d public.task_handoffs;
  copy uuid;
begin
  if me is null and coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  select * into old from public.task_handoffs where id = p_task_id for update;
  if not found or (me is not null and not baton_private.can_see_task(old, me)) then
    raise exception 'no task % to retry', p_task_id using errcode = 'BT002', hint = 'baton tasks --failed lists the failed tasks you sent.';
  end if;
  if me is not null and old.from_agent <> me then
    raise exception 'only the sender of task % (or an operator) can retry it', p_task_id
      using errcode = 'BT003', hint = format('Ask "%s" to retry it.', old.from_agent);
  end if;
  if me is not null and old.parent_task_id is not null then
    select * into parent from public.task_handoffs p where p.id = old.parent_task_id;
    if parent.claimed_by is distinct from me and parent.from_agent <> me then
      raise exception 'only the holder or the sender of task % can hand off work within it, and a retry of task % would', old.parent_task_id, p_task_id
        using errcode = 'BT003', hint = 'Hand off the work again without a parent, or ask the parent''s holder to retry it.';
    end if;
  end if;
  if old.status <> 'failed' then
    raise exception 'task % is %; only failed tasks are retried', p_task_id, old.status
      using errcode = 'BT001', hint = 'A task still open retries by itself while attempts remain (baton fail --retry); hand off a new one otherwise.';
  end if;
  select r.id into already from public.task_handoffs r
  where r.retry_of = old.id and r.status in ('pending', 'claimed', 'in_progress', 'input_required') limit 1;
  if already is not null then
    raise exception 'task % is already being retried as %', p_task_id, already
      using errcode = 'BT010', hint = 'Wait for that attempt; retry it in turn if it fails.';
  end if;
  insert into public.task_handoffs (
    from_agent, to_agent, title, description, priority, payload, required_capabilities, deadline, max_attempts,
    parent_task_id, lease_seconds, expected_outputs, input_artifacts, retry_of)
  values (
    old.from_agent, old.to_agent, old.title, old.description, old.priority, old.payload, old.required_capabilities,
    case when old.deadline > now() then old.deadline end, old.max_attempts,
    old.parent_task_id, old.lease_seconds, old.expected_outputs, old.input_artifacts, old.id)
  returning * into t;

  -- The tasks that were cancelled because this one failed come back too, waiting on the new attempt:
  -- each waited on it (or on one of them, through the whole graph), never ran, and was cancelled in
  -- the very transaction that failed it (the same completed_at, which now() gives every change of one
  -- transaction). Each comes back as a retry of its own (retry_of), in the order they were handed
  -- off, so that a task comes back after everything it depends on. One that its caller could not
  -- retry (another sender's), or whose other dependencies have failed meanwhile (BT015), stays
  -- cancelled, and baton chain shows it so.
  wave := array[old.id];
  while cardinality(wave) > 0 loop
    select coalesce(array_agg(distinct c.id), '{}') into wave
    from baton_private.dependents_of(wave) x join public.task_handoffs c on c.id = x.task_id
    where c.status = 'cancelled' and c.completed_at = old.completed_at and c.attempts = 0
      and c.on_dependency_failure = 'cancel' and not c.id = any (fallen);
    fallen := fallen || wave;
  end loop;
  was := array[old.id];
  made := array[t.id];
  for d in select * from public.task_handoffs c where c.id = any (fallen) order by c.created_at, c.id loop
    continue when me is not null and (d.from_agent <> me or (d.parent_task_id is not null and not exists (
      select from public.task_handoffs p where p.id = d.parent_task_id and (p.claimed_by = me or p.from_agent = me))));
    begin
      insert into public.task_handoffs (
        from_agent, to_agent, title, description, priority, payload, required_capabilities, deadline, max_attempts,
        parent_task_id, lease_seconds, expected_outputs, input_artifacts, retry_of,
        depends_on, dependency_mode, on_dependency_failure)
      values (
        d.from_agent, d.to_agent, d.title, d.description, d.priority, d.payload, d.required_capabilities,
        case when d.deadline > now() then d.deadline end, d.max_attempts,
        d.parent_task_id, d.lease_seconds, d.expected_outputs, d.input_artifacts, d.id,
        array(select coalesce(made[array_position(was, u.id)], u.id) from unnest(d.depends_on) with ordinality u (id, n) order by u.n),
        d.dependency_mode, d.on_dependency_failure)
      returning id into copy;
      was := was || d.id;
      made := made || copy;
    exception when sqlstate 'BT015' then
      null; -- another of its dependencies ended without completing: it stays cancelled
    end;
  end loop;
  return t;
end
$$;

comment on function baton_private.retry_task(p_task_id uuid) is 'A new attempt at a failed task: a new task with the same work, sent as the original sender, linked by retry_of; the tasks cancelled because it failed come back too, waiting on it. Its sender or the operator (service role) may retry; one open retry at a time.';
comment on function public.retry_task(p_task_id uuid) is 'A new attempt at a failed task: a new task with the same work, sent as the original sender, linked by retry_of; the tasks cancelled because it failed come back too, waiting on it. Its sender or the operator (service role) may retry; one open retry at a time.';
