-- A request notes that its agent was heard from as the request commits, not as it starts.
--
-- The request check wrote the beat first, so a request refused afterwards (a claim already taken, a
-- quota, a bad argument) rolled back an update of its agent's row. Postgres has a race there (seen on
-- 17.10): while one transaction that updated a row is aborting, another transaction's update of the
-- same row, when a third holds a key-share lock on it, can fail with "new multixact has more than one
-- updating member" (XX000, a 500 from PostgREST). Every hand-off's foreign-key check takes such a
-- lock on its sender's and addressee's rows, and the refused request leaves the beat due, so the same
-- agent's next request updates the row at once: under load a request failed with a 500 now and then
-- (test/hardening.test.ts, "one lock order", in one full run of the suite). Three SQL loops reproduce
-- it on bare Postgres, without Baton: one updates a row and rolls back, one inserts rows referencing
-- it, one updates it (docs/security.md, "Who may do what").
--
-- Now the check queues the beat in baton_private.pending_beats, and a deferred constraint trigger
-- writes it as the transaction commits: a refused request never updates its agent's row. A request
-- that is refused does not count as being heard from; the next one that goes through does.

comment on column public.agents.last_heartbeat is 'Server time the agent was last heard from: every call it makes that can write and goes through (heartbeat, status, progress, claim, complete, renew, ...) counts, as it commits. Older than baton_settings.offline_after, or than two of its wake-ups, means offline.';

create unlogged table baton_private.pending_beats (
  agent_id text not null
);

comment on table baton_private.pending_beats is 'Beats queued by the request check (check_request) and written as the request commits (trigger note_at_commit): a refused request never updates its agent''s row. Empty outside a transaction.';

revoke all on table baton_private.pending_beats from public, anon, authenticated, service_role;

-- The beat, now also for a request that said itself whether its agent is active: a clean stop
-- (send_heartbeat with p_active false, a PATCH of is_active) keeps what it said, as when the beat came
-- first and the request's own change after it.
drop function baton_private.record_beat(text);

create function baton_private.record_beat(agent text, keep_active boolean default false) returns void
language plpgsql security definer set search_path = ''
as $$
begin
  update public.agents a set last_heartbeat = now(), is_active = a.is_active or not keep_active
  where a.id = (
    select b.id from public.agents b
    where b.id = agent and baton_private.beat_due(b.last_heartbeat, b.is_active)
    for no key update skip locked
  );
end
$$;

revoke all on function baton_private.record_beat(text, boolean) from public, anon, authenticated;

comment on function baton_private.record_beat is 'Notes that an agent was heard from, when a beat is due (beat_due): last_heartbeat is now, and the agent active unless keep_active. Skips a row another transaction is updating: that one notes it.';

-- Which agent a request said itself is active or not (an UPDATE naming is_active), for its commit.
create function baton_private.tg_agents__said_active() returns trigger
language plpgsql set search_path = ''
as $$
begin
  perform pg_catalog.set_config('baton.said_active', new.id, true);
  return new;
end
$$;

revoke all on function baton_private.tg_agents__said_active() from public, anon, authenticated;

create trigger step1_said_active before update of is_active on public.agents
  for each row execute function baton_private.tg_agents__said_active();

create function baton_private.tg_pending_beats__note() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  -- Each transaction deletes its own row as it commits, so no other transaction's row is left to see.
  delete from baton_private.pending_beats p where p.agent_id = new.agent_id;
  perform baton_private.record_beat(new.agent_id,
    keep_active => pg_catalog.current_setting('baton.said_active', true) is not distinct from new.agent_id);
  return null;
end
$$;

revoke all on function baton_private.tg_pending_beats__note() from public, anon, authenticated;

create constraint trigger note_at_commit after insert on baton_private.pending_beats
  deferrable initially deferred
  for each row execute function baton_private.tg_pending_beats__note();

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

  -- Written as the request commits (note_at_commit), never by a request that is refused.
  if beat_due and current_setting('transaction_read_only') = 'off' then
    insert into baton_private.pending_beats (agent_id) values (agent);
  end if;
end
$$;
