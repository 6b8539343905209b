-- One rule for who may reach which relation, covering every relation Baton serves, including those
-- added after the request check was written (agent_usage, recurring_handoffs and the views for Studio):
-- baton_private.baton_relations() names them in one place, test/rules.enumerate.test.ts fails when the
-- catalogue holds a relation it does not name, and the request check reads only that list.

create function baton_private.baton_relations() returns text[]
language sql immutable
as $$
  select array[
    -- tables
    'agents', 'agent_tokens', 'agent_messages', 'agent_usage', 'baton_settings', 'recurring_handoffs',
    'task_handoffs', 'task_events', 'task_artifacts', 'task_declines', 'task_status_transitions',
    -- views
    'agent_presence', 'task_lineage', 'dead_letters', 'waiting_tasks', 'stuck_claims', 'task_queue']
$$;
comment on function baton_private.baton_relations is 'Every relation Baton serves through the API, tables and views: what the request check guards. A relation added later is added here too (test/rules.enumerate.test.ts fails until it is).';

-- The hint for a direct write to a Baton relation, or null where the write is one agents may make
-- (their own row of agents, their own messages; row-level security says which rows).
create or replace function baton_private.rest_write_hint(relation text, method text) returns text
language sql immutable set search_path = ''
as $$
  select case
    when relation = 'task_handoffs' and method = 'POST' then
      'Hand off through the RPC: POST /rest/v1/rpc/handoff_task with {"p_title": "...", "p_to_agent": "cheenu", "p_priority": "high", "p_payload": {}} (null p_to_agent broadcasts); the sender is taken from your token.'
    when relation = 'task_handoffs' and method in ('PATCH', 'PUT') then
      'Change a task through its RPC: rpc/claim_task {"p_task_id": "...", "p_start": true}, rpc/complete_task {"p_task_id", "p_claim_token", "p_result"}, rpc/fail_task {"p_task_id", "p_claim_token", "p_error"}, rpc/reject_task {"p_task_id", "p_reason"}, rpc/report_progress, rpc/release_task or rpc/cancel_task.'
    when relation = 'task_handoffs' and method = 'DELETE' then
      'Tasks are never deleted: the sender withdraws one with POST /rest/v1/rpc/cancel_task {"p_task_id": "...", "p_reason": "..."}.'
    when relation = 'task_artifacts' then
      'The holder attaches artifacts with POST /rest/v1/rpc/attach_artifact {"p_task_id", "p_name", "p_media_type", "p_content" (hex) or "p_uri"}.'
    when relation = 'task_events' then
      'Task history is written by the database as tasks change; change the task through its RPC instead.'
    when relation = 'agents' and method in ('POST', 'PUT', 'DELETE') then
      'Agents are registered and removed by an operator (baton agent create <id>); an agent changes only its own row: PATCH /rest/v1/agents?id=eq.<you> with {"status_message", "capabilities", "poll_interval", "is_active", "last_heartbeat"}, or POST /rest/v1/rpc/send_heartbeat.'
    when relation in ('agents', 'agent_messages') then null
    when relation = 'recurring_handoffs' then
      'Recurring hand-offs are kept by an operator: baton schedule add|pause|remove (secret key).'
    when relation = any (baton_private.baton_relations()) then
      format('%s is read-only for agents; an operator changes it with the secret key.', relation)
  end
$$;

create or replace function baton_private.check_request() returns void
language plpgsql volatile security definer set search_path = ''
as $$
declare
  claims jsonb := auth.jwt();
  agent text := claims ->> 'agent_id';
  token_id text := claims ->> 'jti';
  token public.agent_tokens;
  method text := current_setting('request.method', true);
  relation text := split_part(ltrim(coalesce(current_setting('request.path', true), ''), '/'), '/', 1);
  writes boolean := method in ('POST', 'PATCH', 'PUT', 'DELETE');
  served boolean := false;
  hint text;
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
  if agent is null then
    return;
  end if;
  if token_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    select * into token from public.agent_tokens t where t.id = token_id::uuid and t.agent_id = agent;
  end if;
  if token.id is null then
    raise exception 'the token for agent "%" was never issued by this project', agent
      using errcode = 'BT006', hint = 'Use a token printed by baton agent create or baton agent token.';
  elsif token.revoked_at is not null then
    raise exception 'the token for agent "%" was revoked at %', agent, token.revoked_at
      using errcode = 'BT006', hint = 'Ask an operator for a new token: baton agent token <id>.';
  elsif token.expires_at <= now() then
    raise exception 'the token for agent "%" expired at %', agent, token.expires_at
      using errcode = 'BT006', hint = 'Ask an operator for a new token: baton agent token <id>.';
  end if;

  if writes and served then
    hint := baton_private.rest_write_hint(relation, method);
    if hint is not null then
      raise exception 'agents do not % % rows directly', lower(method), relation
        using errcode = '42501', hint = hint;
    end if;
  end if;

  if current_setting('transaction_read_only') = 'off' then
    perform baton_private.record_beat(agent);
  end if;
end
$$;

-- Working on a task lets an agent see the task's context (its ancestors and their inputs, its chain),
-- but a task an agent sent itself grants it nothing beyond its own rights: else a holder moved off a
-- task would keep reading it (and retrying within it) through a child it had addressed to itself.
create or replace function baton_private.works_on(t public.task_handoffs, agent text) returns boolean
language sql stable set search_path = ''
as $$
  select coalesce(
    t.from_agent <> agent and (
      t.claimed_by = agent or t.to_agent = agent
      or (t.to_agent is null and t.required_capabilities <@ baton_private.agent_capabilities(agent))),
    false)
$$;

-- A retry is a new task within the failed one's parent: its sender must still hold or have sent that
-- parent, as for any hand-off within a task.
create or replace function public.retry_task(p_task_id uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  old public.task_handoffs;
  parent public.task_handoffs;
  already uuid;
  t public.task_handoffs;
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
  return t;
end
$$;
