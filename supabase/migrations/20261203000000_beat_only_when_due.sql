-- The request check notes that an agent was heard from only when that is due.
--
-- Every request with an agent's token called record_beat(), whose update finds nothing to change
-- unless the agent was last heard from over a second ago (or was marked inactive): at hundreds of
-- requests a second, a function call and an update statement per request that almost never wrote
-- anything. The request check already reads the token's row; it now reads the agent's beat beside it
-- and calls record_beat() only when a beat is due. When a beat is due is said once, in beat_due(),
-- which record_beat() asks too (two requests may both find it due; the update, with skip locked,
-- still writes at most one beat).

create function baton_private.beat_due(last_heartbeat timestamptz, is_active boolean) returns boolean
language sql stable parallel safe
as $$
  select last_heartbeat is null or last_heartbeat < now() - interval '1 second' or not is_active
$$;

revoke all on function baton_private.beat_due(timestamptz, boolean) from public, anon, authenticated;

comment on function baton_private.beat_due is 'Whether a request from this agent should note that it was heard from: it was last heard from over a second ago, never, or it was marked inactive.';

create or replace function baton_private.record_beat(agent text) returns void
language plpgsql security definer set search_path = ''
as $$
begin
  update public.agents a set last_heartbeat = now(), is_active = true
  where a.id = (
    select b.id from public.agents b
    where b.id = agent and baton_private.beat_due(b.last_heartbeat, b.is_active)
    for no key update skip locked
  );
end
$$;

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
