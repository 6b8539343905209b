-- One worker per agent, whatever its version. A daemon that names its process (X-Baton-Incarnation,
-- begin_incarnation) is fenced off as soon as a later one begins (BT016); a caller that names none (a
-- daemon from before incarnations, or a command typed by hand) was not, and went on claiming beside the
-- agent's daemon, its claims kept alive by that daemon's heartbeats (issue 64, findings 4 and 5).
--
-- Now, while the agent is run by a process that names itself (an incarnation whose process has beaten
-- with it, the agent online), a caller that names none may not claim (BT016, saying why); everything else it may still do (report
-- the work it holds, hand off, read). A daemon that stops cleanly ends its incarnation, so a command by
-- hand can claim at once; one that was killed leaves it until the agent goes offline
-- (baton_settings.offline_after), after which the next caller that names no process ends it.

-- Whether the agent's incarnation is a daemon's: a process that, once begun, named itself in a heartbeat.
-- (`baton status --restarted` begins one by hand, and names it nowhere after: commands by hand go on.)
alter table public.agents add column incarnation_heard_at timestamptz;
comment on column public.agents.incarnation_heard_at is 'When the process of the current incarnation last named itself in a heartbeat; null until it does (an incarnation begun by hand never does).';

create function baton_private.tg_agents__new_incarnation()
returns trigger
language plpgsql set search_path = ''
as $$
begin
  new.incarnation_heard_at := null;
  return new;
end
$$;
revoke all on function baton_private.tg_agents__new_incarnation() from public, anon, authenticated;
create trigger new_incarnation before update on public.agents
  for each row when (new.incarnation is distinct from old.incarnation)
  execute function baton_private.tg_agents__new_incarnation();

create or replace function baton_private.check_incarnation(agent text)
returns uuid
language plpgsql stable security definer set search_path = ''
as $$
declare
  mine uuid := baton_private.request_incarnation();
  a public.agents;
begin
  select * into a from public.agents x where x.id = agent;
  if mine is not null then
    if a.incarnation is distinct from mine then
      raise exception 'agent % is run by a newer process now (since %); this process was superseded', agent, a.incarnation_started_at
        using errcode = 'BT016', hint = 'Stop this process: a process started later as the same agent took over its claims. Run one daemon per agent.';
    end if;
  elsif a.incarnation is not null and a.incarnation_heard_at is not null and baton_private.is_online(a) then
    raise exception 'agent % is run by a daemon (its process since %); a caller that names no process cannot claim its work meanwhile', agent, a.incarnation_started_at
      using errcode = 'BT016',
            hint = 'An older daemon of this agent: stop it (docs/upgrading.md). To claim by hand: stop the daemon first (if it is gone without saying so, say it: baton status --restarted). Run one worker per agent.';
  end if;
  return mine;
end
$$;
revoke all on function baton_private.check_incarnation(text) from public, anon, authenticated;
comment on function baton_private.check_incarnation(text) is 'The incarnation the request names (null by hand), after checking that it is still the agent''s current one (else BT016: superseded); a request that names none is refused (BT016) while the agent is run by a process that names one (an incarnation, the agent online).';

create or replace function baton_private.send_heartbeat(p_status_message text default null, p_active boolean default true,
                                                       p_poll_interval interval default null, p_incarnation uuid default null)
returns public.agents
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  row public.agents;
begin
  update public.agents a
  set last_heartbeat = now(),
      is_active = coalesce(p_active, true),
      status_message = coalesce(p_status_message, a.status_message),
      poll_interval = coalesce(p_poll_interval, a.poll_interval),
      incarnation_heard_at = case when p_incarnation is not null and coalesce(p_active, true) then now() else a.incarnation_heard_at end,
      -- A daemon going away ends its incarnation; a process that named none ends one left by a daemon
      -- that went away without saying so (the agent offline since).
      incarnation = case
        when p_incarnation is not null and not coalesce(p_active, true) then null
        when p_incarnation is null and a.incarnation is not null and not baton_private.is_online(a) then null
        else a.incarnation end
  where a.id = me and (p_incarnation is null or a.incarnation is not distinct from p_incarnation)
  returning a.* into row;
  if row.id is null then
    select a.* into row from public.agents a where a.id = me;
    raise exception 'agent % is run by a newer process now (since %); this process was superseded', me, row.incarnation_started_at
      using errcode = 'BT016', hint = 'Stop this process: a process started later as the same agent took over its claims. Run one daemon per agent.';
  end if;
  return row;
end
$$;
