-- Requests: what PostgREST runs before every request (pgrst.db_pre_request). It refuses tokens that
-- were never issued, revoked or expired; keeps the anon key and tokens without an agent_id off every
-- relation Baton serves; refuses writes to views and explains direct writes that must go through an
-- RPC; and notes that the agent was heard from. RPCs check their caller themselves.

create function baton_private.check_request() returns void
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

revoke all on function baton_private.check_request() from public;
grant execute on function baton_private.check_request() to anon, authenticated, service_role;

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
create function baton_private.rest_write_hint(relation text, method text) returns text
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

revoke all on function baton_private.rest_write_hint(text, text) from public, anon, authenticated;

alter role authenticator set pgrst.db_pre_request = 'baton_private.check_request';

notify pgrst, 'reload config';

-- Where the database allowed no event trigger (see foundation), no function in baton_private keeps the
-- EXECUTE that PostgreSQL gives PUBLIC; the grants each file made to named roles stay.
revoke execute on all functions in schema baton_private from public;
