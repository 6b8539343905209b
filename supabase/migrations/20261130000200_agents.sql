-- Agents: who they are (agents), the tokens they act with (agent_tokens), and how they say they are
-- alive: heartbeats, the rhythm they wake at (poll_interval), and incarnations (a process starting as
-- the agent hands back what an earlier one held). An agent acts with a JWT (role authenticated) that
-- carries `agent_id` and a token id `jti`; each request is checked against agent_tokens before it
-- runs (requests), so revoking a token works at once.

-- Agents --------------------------------------------------------------------------------------------
create table public.agents (
  id text not null,
  display_name text,
  capabilities text[] not null default '{}'::text[],
  skills_offered jsonb not null default '[]'::jsonb,
  comms_endpoint text,
  is_active boolean not null default false,
  last_heartbeat timestamp with time zone,
  status_message text,
  max_concurrent integer not null default 4,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  poll_interval interval,
  incarnation uuid,
  incarnation_started_at timestamp with time zone,
  constraint agents_pkey PRIMARY KEY (id)
);
alter table public.agents enable row level security;

revoke all on table public.agents from anon, authenticated;
grant select on table public.agents to authenticated;
grant update (display_name, capabilities, skills_offered, comms_endpoint, status_message, max_concurrent) on table public.agents to authenticated;
grant all on table public.agents to service_role;
grant update (poll_interval, last_heartbeat, is_active) on table public.agents to authenticated;

comment on table public.agents is 'Every agent instance that may hand off or take work. Registered by an operator (baton agent create); each agent updates only its own row.';
comment on column public.agents.id is 'A slug such as cheenu: lower-case letters, digits, - and _.';
comment on column public.agents.capabilities is 'What the agent can do. A broadcast task may be claimed by an agent holding all of its required_capabilities.';
comment on column public.agents.skills_offered is 'Free-form JSON describing skills, for peers choosing whom to hand work to.';
comment on column public.agents.comms_endpoint is 'Optional address where the agent can be reached outside Baton.';
comment on column public.agents.is_active is 'True once the agent is heard from; a clean stop (a daemon shutting down, or baton status --stopped) sets it false.';
comment on column public.agents.last_heartbeat is 'Server time the agent was last heard from: every call it makes that can write (heartbeat, status, progress, claim, complete, renew, ...) counts. Older than baton_settings.offline_after, or than two of its wake-ups, means offline.';
comment on column public.agents.max_concurrent is 'How many tasks the agent may hold at once (claimed, in progress or waiting for input). Claims beyond it are refused.';
comment on column public.agents.poll_interval is 'How often the agent wakes: a daemon''s schedule, a cron job''s period (baton status --every 15m, the daemon, or an operator). Its claims and its place in discovery survive two missed wake-ups.';
comment on column public.agents.incarnation is 'The process running as this agent now: set when a daemon starts (begin_incarnation), which hands back every claim an earlier process left. A heartbeat naming another incarnation is refused (BT016): that process was superseded.';
comment on column public.agents.incarnation_started_at is 'When the current incarnation began (server time).';

-- Tokens --------------------------------------------------------------------------------------------
create table public.agent_tokens (
  id uuid not null default gen_random_uuid(),
  agent_id text not null,
  created_at timestamp with time zone not null default now(),
  expires_at timestamp with time zone,
  revoked_at timestamp with time zone,
  constraint agent_tokens_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE,
  constraint agent_tokens_pkey PRIMARY KEY (id)
);
alter table public.agent_tokens enable row level security;

revoke all on table public.agent_tokens from anon, authenticated;
grant select on table public.agent_tokens to authenticated;
grant all on table public.agent_tokens to service_role;

comment on table public.agent_tokens is 'Every access token issued to an agent, by token id (the JWT''s jti). A request whose token is missing here or revoked is refused.';
comment on column public.agent_tokens.revoked_at is 'Set by baton agent revoke; from then on the token is refused.';

create index agents_last_heartbeat_idx on public.agents (last_heartbeat desc);

create index agent_tokens_agent_id_idx on public.agent_tokens (agent_id);

-- Operator calls (service role) ---------------------------------------------------------------------
create function public.register_agent(
  p_id text,
  p_display_name text default null,
  p_capabilities text[] default '{}',
  p_skills_offered jsonb default '[]',
  p_max_concurrent integer default 4,
  p_token_expires_at timestamptz default null
) returns table (agent_id text, token_id uuid)
language plpgsql security definer set search_path = ''
as $$
begin
  if exists (select from public.agents a where a.id = p_id) then
    raise exception 'agent "%" already exists', p_id
      using errcode = 'BT010', hint = 'Pick another id, or issue a new token for it: baton agent token <id>.';
  end if;
  insert into public.agents (id, display_name, capabilities, skills_offered, max_concurrent)
  values (p_id, p_display_name, coalesce(p_capabilities, '{}'), coalesce(p_skills_offered, '[]'),
          coalesce(p_max_concurrent, 4));
  return query
    insert into public.agent_tokens as t (agent_id, expires_at) values (p_id, p_token_expires_at)
    returning t.agent_id, t.id;
end
$$;

revoke all on function public.register_agent from public, anon, authenticated;
grant execute on function public.register_agent to service_role;

comment on function public.register_agent is 'Operator only: registers an agent and issues its first token id (sign it into a JWT with the project''s JWT secret).';

create function public.issue_agent_token(p_agent_id text, p_expires_at timestamptz default null)
returns uuid
language plpgsql security definer set search_path = ''
as $$
declare
  token uuid;
begin
  if not exists (select from public.agents a where a.id = p_agent_id) then
    raise exception 'no agent named "%"', p_agent_id
      using errcode = 'BT002', hint = 'Register it first: baton agent create <id>.';
  end if;
  insert into public.agent_tokens (agent_id, expires_at) values (p_agent_id, p_expires_at) returning id into token;
  return token;
end
$$;

revoke all on function public.issue_agent_token from public, anon, authenticated;
grant execute on function public.issue_agent_token to service_role;

comment on function public.issue_agent_token is 'Operator only: issues another token id for an existing agent.';

create function public.revoke_agent_tokens(p_agent_id text) returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  revoked integer;
begin
  if not exists (select from public.agents a where a.id = p_agent_id) then
    raise exception 'no agent named "%"', p_agent_id
      using errcode = 'BT002', hint = 'List agents with: baton agent list.';
  end if;
  update public.agent_tokens set revoked_at = now()
  where agent_id = p_agent_id and revoked_at is null;
  get diagnostics revoked = row_count;
  update public.agents set is_active = false where id = p_agent_id;
  return revoked;
end
$$;

revoke all on function public.revoke_agent_tokens from public, anon, authenticated;
grant execute on function public.revoke_agent_tokens to service_role;

comment on function public.revoke_agent_tokens is 'Operator only: revokes every token of an agent at once.';

create function public.send_heartbeat(
  p_status_message text default null,
  p_active boolean default true,
  p_poll_interval interval default null,
  p_incarnation uuid default null
) returns public.agents
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
      poll_interval = coalesce(p_poll_interval, a.poll_interval)
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

revoke all on function public.send_heartbeat from public, anon;
grant execute on function public.send_heartbeat to authenticated;

comment on function public.send_heartbeat is 'The calling agent says it is alive (server time), optionally with a status line and how often it wakes (p_poll_interval); p_active = false marks a clean stop. With p_incarnation, refused (BT016) when a later process of the same agent began since: the caller was superseded.';

create function public.begin_incarnation() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  fresh uuid := gen_random_uuid();
  ids uuid[];
  reasons text[];
begin
  -- The agent's row is the lock: two processes starting at once take turns, and the later one wins.
  update public.agents
  set incarnation = fresh, incarnation_started_at = now(), last_heartbeat = now(), is_active = true
  where id = me;

  select coalesce(array_agg(t.id), '{}'),
         coalesce(array_agg(format('holder %s restarted at %s; the claim of its earlier process was handed back',
           me, to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))), '{}')
  into ids, reasons
  from (
    select t.id from public.task_handoffs t
    where t.claimed_by = me and t.status in ('claimed', 'in_progress')
    order by t.id
    for update
  ) t;

  return jsonb_build_object('incarnation', fresh)
    || baton_private.hand_back_lost_claims(ids, reasons, 'holder restarted');
end
$$;

revoke all on function public.begin_incarnation from public, anon;
grant execute on function public.begin_incarnation to authenticated;

comment on function public.begin_incarnation is 'A new process starts as the calling agent: records a new incarnation and hands back every claim the agent held (never started: pending without counting an attempt; in progress: pending after its attempt, or failed on the last), with the reason in the history. Daemons call it on start; hand-driven agents with baton status --restarted. Returns {incarnation, requeued_unstarted, requeued_expired, dead_lettered}.';

create function baton_private.record_beat(agent text) returns void
language plpgsql security definer set search_path = ''
as $$
begin
  update public.agents a set last_heartbeat = now(), is_active = true
  where a.id = (
    select b.id from public.agents b
    where b.id = agent and (b.last_heartbeat is null or b.last_heartbeat < now() - interval '1 second' or not b.is_active)
    for no key update skip locked
  );
end
$$;

revoke all on function baton_private.record_beat(text) from public, anon, authenticated;

-- Online: running, and heard from within offline_after or two of its wake-ups, whichever is longer.
create function baton_private.is_online(a public.agents) returns boolean
language sql stable security definer set search_path = ''
as $$
  select coalesce(
    a.is_active
      and a.last_heartbeat > now() - greatest((baton_private.settings()).offline_after, 2 * coalesce(a.poll_interval, interval '0')),
    false)
$$;

grant execute on function baton_private.is_online(public.agents) to anon, authenticated, service_role;

create function baton_private.agent_capabilities(agent text) returns text[]
language plpgsql stable security definer set search_path = ''
as $$
begin
  return coalesce((select a.capabilities from public.agents a where a.id = agent), '{}');
end
$$;

grant execute on function baton_private.agent_capabilities(text) to anon, authenticated, service_role;

-- An agent may say that it is alive and how often it wakes, never when it was last heard from.
create function baton_private.tg_agents__heard_from() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if new.poll_interval is not null and new.poll_interval not between interval '1 second' and interval '7 days' then
    raise exception 'poll_interval must be between 1 second and 7 days, got %', new.poll_interval
      using errcode = 'BT005', hint = 'Say how often the agent wakes, e.g. baton status --every 15m.';
  end if;
  if baton_private.current_agent_id() is not null and new.last_heartbeat is distinct from old.last_heartbeat then
    new.last_heartbeat := now();
  end if;
  return new;
end
$$;

revoke all on function baton_private.tg_agents__heard_from() from public, anon, authenticated;

create function baton_private.tg_agents__validate() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if new.id is null or not baton_private.is_slug(new.id) or new.id ~ '[.:]' then
    raise exception 'invalid agent id "%"', left(coalesce(new.id, ''), 80)
      using errcode = 'BT005',
            hint = 'Use 1 to 63 lower-case letters, digits, - and _, starting with a letter or digit (e.g. cheenu).';
  end if;
  if tg_op = 'UPDATE' and new.id <> old.id then
    raise exception 'an agent''s id cannot change' using errcode = 'BT005',
      hint = 'Register a new agent instead.';
  end if;
  if cardinality(new.capabilities) > 64
     or exists (select from unnest(new.capabilities) c where c is null or not baton_private.is_slug(c)) then
    raise exception 'invalid capabilities for agent "%"', new.id
      using errcode = 'BT005',
            hint = 'Give at most 64 capabilities, each 1 to 63 lower-case letters, digits, ., :, - or _.';
  end if;
  if length(new.display_name) > 200 or length(new.status_message) > 500 or length(new.comms_endpoint) > 500 then
    raise exception 'display name, status message or endpoint of agent "%" is too long', new.id
      using errcode = 'BT005', hint = 'Keep the display name under 200 characters and the status message and endpoint under 500.';
  end if;
  if octet_length(new.skills_offered::text) > 65536 then
    raise exception 'skills_offered of agent "%" is larger than 64 KiB', new.id
      using errcode = 'BT005', hint = 'Describe skills briefly; put long documents elsewhere and link them.';
  end if;
  if new.max_concurrent is null or new.max_concurrent not between 1 and 1000 then
    raise exception 'max_concurrent must be between 1 and 1000, got %', new.max_concurrent
      using errcode = 'BT005', hint = 'Set max_concurrent to how many tasks the agent runs at once.';
  end if;
  new.updated_at := now();
  return new;
end
$$;

create view public.agent_presence with (security_invoker = true) as
  select a.*, baton_private.is_online(a) as is_online
  from public.agents a;

revoke all on public.agent_presence from anon, authenticated;
grant select on public.agent_presence to authenticated, service_role;

comment on view public.agent_presence is 'Every agent with is_online: running and heard from within baton_settings.offline_after (or two of its declared wake-ups). What discovery reads.';

create trigger step3_validate before insert or update on public.agents
  for each row execute function baton_private.tg_agents__validate();

create trigger step1_heard_from before insert or update on public.agents
  for each row execute function baton_private.tg_agents__heard_from();

create policy "Agents can see their own tokens" on public.agent_tokens
  for select to authenticated using (agent_id = (select baton_private.current_agent_id()));

create policy "Agents can see every registered agent" on public.agents
  for select to authenticated using (true);

create policy "Agents can change only their own row" on public.agents
  for update to authenticated
  using (id = (select baton_private.current_agent_id()))
  with check (id = (select baton_private.current_agent_id()));
