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
-- Now record_beat(), which the request check calls, queues the beat in baton_private.pending_beats,
-- and a deferred constraint trigger writes it as the transaction commits: a refused request never updates its agent's row. A request
-- that is refused does not count as being heard from; the next one that goes through does.

comment on column public.agents.last_heartbeat is 'Server time the agent was last heard from: every call it makes that can write and goes through (heartbeat, status, progress, claim, complete, renew, ...) counts, as it commits. Older than baton_settings.offline_after, or than two of its wake-ups, means offline.';

create unlogged table baton_private.pending_beats (
  agent_id text not null
);

comment on table baton_private.pending_beats is 'Beats queued by record_beat() (the request check calls it) and written as the request commits (trigger note_at_commit): a refused request never updates its agent''s row. Empty outside a transaction.';

revoke all on table baton_private.pending_beats from public, anon, authenticated, service_role;

-- record_beat(), which the request check calls when a beat is due, now only queues it.
create or replace function baton_private.record_beat(agent text) returns void
language plpgsql security definer set search_path = ''
as $$
begin
  insert into baton_private.pending_beats (agent_id) values (agent);
end
$$;

comment on function baton_private.record_beat is 'Notes that an agent was heard from, as the request commits (trigger note_at_commit on baton_private.pending_beats): a request that is refused notes nothing.';

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

-- The beat, as the request commits: last heard from now, and active again, unless the request said
-- itself whether the agent is active (a clean stop: send_heartbeat with p_active false, a PATCH of
-- is_active), as when the beat came first and the request's own change after it. A row another
-- transaction is updating is skipped: that one notes it.
create function baton_private.tg_pending_beats__note() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  keep_active boolean := pg_catalog.current_setting('baton.said_active', true) is not distinct from new.agent_id;
begin
  -- Each transaction deletes its own row as it commits, so no other transaction's row is left to see.
  delete from baton_private.pending_beats p where p.agent_id = new.agent_id;
  update public.agents a set last_heartbeat = now(), is_active = a.is_active or not keep_active
  where a.id = (
    select b.id from public.agents b
    where b.id = new.agent_id and baton_private.beat_due(b.last_heartbeat, b.is_active)
    for no key update skip locked
  );
  return null;
end
$$;

revoke all on function baton_private.tg_pending_beats__note() from public, anon, authenticated;

create constraint trigger note_at_commit after insert on baton_private.pending_beats
  deferrable initially deferred
  for each row execute function baton_private.tg_pending_beats__note();
