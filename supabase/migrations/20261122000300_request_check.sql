-- What PostgREST runs before every request (pgrst.db_pre_request), now doing three things for agent tokens:
-- refuse tokens Baton did not issue or that were revoked or expired (as before); record that the agent
-- was heard from (a request that can write; reads run in read-only transactions); and answer the direct
-- table writes of the protocol's old scripts with the RPC to call instead of a bare "permission denied".
-- It only ever speaks about Baton's own tables, so a project that serves other apps is not affected.

-- The hint for an agent writing a Baton table directly, or null where the write is one agents may make.
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
    when relation in ('agent_tokens', 'baton_settings', 'task_status_transitions', 'task_declines', 'agent_presence', 'task_lineage') then
      format('%s is read-only for agents; an operator changes it with the service-role key.', relation)
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
  hint text;
begin
  if agent is null then
    -- Only an agent's token (or the operator's service role) reaches Baton's tables: neither the anon
    -- key nor a token of some other sign-in on the same project, which Baton never issued.
    if coalesce(claims ->> 'role', 'anon') in ('anon', 'authenticated') and relation in (
         'agents', 'agent_presence', 'agent_tokens', 'agent_messages', 'task_handoffs', 'task_events',
         'task_artifacts', 'task_declines', 'task_lineage', 'baton_settings', 'task_status_transitions') then
      raise exception '%', case when claims ->> 'role' = 'authenticated'
                                then format('a token without an agent_id cannot read or write %s', relation)
                                else format('the anon key alone cannot read or write %s', relation) end
        using errcode = '42501',
              hint = 'Act as an agent: send its token as Authorization: Bearer $BATON_AGENT_TOKEN (baton agent create <id> prints one), with the anon key as apikey.';
    end if;
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

  if method in ('POST', 'PATCH', 'PUT', 'DELETE') then
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

revoke all on function baton_private.rest_write_hint(text, text) from public, anon, authenticated;
