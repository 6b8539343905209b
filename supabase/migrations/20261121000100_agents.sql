-- Agents, their tokens and the settings every rule reads.
-- Identity: an agent acts with a JWT (role authenticated) that carries `agent_id` and a token id `jti`.
-- Each request is checked against agent_tokens before it runs, so revoking a token works at once.

create schema if not exists baton_private;
comment on schema baton_private is 'Baton internals: helpers and trigger functions. Not exposed through the API.';
revoke all on schema baton_private from public;
grant usage on schema baton_private to anon, authenticated, service_role;

-- Who is calling ------------------------------------------------------------------------------------

create function baton_private.current_agent_id() returns text
language sql stable set search_path = ''
as $$ select nullif(auth.jwt() ->> 'agent_id', '') $$;

create function baton_private.require_agent() returns text
language plpgsql stable set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
begin
  if me is null then
    raise exception 'this call must be made by an agent'
      using errcode = 'BT006',
            hint = 'Use an agent''s token (BATON_AGENT_TOKEN), not the anon or service-role key.';
  end if;
  return me;
end
$$;

-- Settings ------------------------------------------------------------------------------------------

create table public.baton_settings (
  id boolean primary key default true check (id),
  max_chain_depth integer not null default 5 check (max_chain_depth between 1 and 100),
  offline_after interval not null default interval '5 minutes' check (offline_after > interval '0'),
  default_lease interval not null default interval '5 minutes' check (default_lease > interval '0'),
  retry_base_delay interval not null default interval '2 seconds' check (retry_base_delay >= interval '0'),
  retry_max_delay interval not null default interval '1 hour' check (retry_max_delay >= interval '0')
);
alter table public.baton_settings enable row level security;
comment on table public.baton_settings is 'One row of operator settings that Baton''s rules read. Edit it here; agents cannot.';
comment on column public.baton_settings.max_chain_depth is 'Loop guard: how deep a chain of hand-offs (parent to child) may go.';
comment on column public.baton_settings.offline_after is 'An agent whose last heartbeat is older than this counts as offline.';
comment on column public.baton_settings.default_lease is 'How long a claim holds before the sweep may re-queue it, unless the claim asks for another.';
comment on column public.baton_settings.retry_base_delay is 'A retried task waits about this long after its first failure, doubling with each attempt (with jitter).';
comment on column public.baton_settings.retry_max_delay is 'The longest a retried task waits before it may be claimed again.';
insert into public.baton_settings default values;
revoke all on table public.baton_settings from anon, authenticated;
grant select on table public.baton_settings to authenticated;
grant all on table public.baton_settings to service_role;
create policy "Agents can read the settings" on public.baton_settings
  for select to authenticated using (true);

create function baton_private.settings() returns public.baton_settings
language sql stable security definer set search_path = ''
as $$ select s from public.baton_settings s where s.id $$;

-- Agents --------------------------------------------------------------------------------------------

create table public.agents (
  id text primary key,
  display_name text,
  capabilities text[] not null default '{}',
  skills_offered jsonb not null default '[]',
  comms_endpoint text,
  is_active boolean not null default false,
  last_heartbeat timestamptz,
  status_message text,
  max_concurrent integer not null default 4,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
alter table public.agents enable row level security;
comment on table public.agents is 'Every agent instance that may hand off or take work. Registered by an operator (baton agent create); each agent updates only its own row.';
comment on column public.agents.id is 'A slug such as cheenu: lower-case letters, digits, - and _.';
comment on column public.agents.capabilities is 'What the agent can do. A broadcast task may be claimed by an agent holding all of its required_capabilities.';
comment on column public.agents.skills_offered is 'Free-form JSON describing skills, for peers choosing whom to hand work to.';
comment on column public.agents.comms_endpoint is 'Optional address where the agent can be reached outside Baton.';
comment on column public.agents.is_active is 'True while the agent''s daemon runs; a clean stop sets it false.';
comment on column public.agents.last_heartbeat is 'Server time of the agent''s last heartbeat; older than baton_settings.offline_after means offline.';
comment on column public.agents.max_concurrent is 'How many tasks the agent may hold at once (claimed, in progress or waiting for input). Claims beyond it are refused.';

create index agents_last_heartbeat_idx on public.agents (last_heartbeat desc);

-- Capability and agent names share one shape, so that they read well in a CLI and in SQL.
create function baton_private.is_slug(value text) returns boolean
language sql immutable set search_path = ''
as $$ select value ~ '^[a-z0-9][a-z0-9._:-]{0,62}$' $$;

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

create trigger validate before insert or update on public.agents
  for each row execute function baton_private.tg_agents__validate();

-- Online means running (is_active) and heard from within baton_settings.offline_after.
create function baton_private.is_online(a public.agents) returns boolean
language sql stable security definer set search_path = ''
as $$ select coalesce(a.is_active and a.last_heartbeat > now() - (baton_private.settings()).offline_after, false) $$;

create view public.agent_presence with (security_invoker = true) as
  select a.*, baton_private.is_online(a) as is_online
  from public.agents a;
comment on view public.agent_presence is 'Every agent with is_online: running and heard from within baton_settings.offline_after. What discovery reads.';
revoke all on public.agent_presence from anon, authenticated;
grant select on public.agent_presence to authenticated, service_role;

-- Tokens --------------------------------------------------------------------------------------------

create table public.agent_tokens (
  id uuid primary key default gen_random_uuid(),
  agent_id text not null references public.agents (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
alter table public.agent_tokens enable row level security;
comment on table public.agent_tokens is 'Every access token issued to an agent, by token id (the JWT''s jti). A request whose token is missing here or revoked is refused.';
comment on column public.agent_tokens.revoked_at is 'Set by baton agent revoke; from then on the token is refused.';
create index agent_tokens_agent_id_idx on public.agent_tokens (agent_id);
revoke all on table public.agent_tokens from anon, authenticated;
grant select on table public.agent_tokens to authenticated;
grant all on table public.agent_tokens to service_role;
create policy "Agents can see their own tokens" on public.agent_tokens
  for select to authenticated using (agent_id = (select baton_private.current_agent_id()));

create function baton_private.agent_capabilities(agent text) returns text[]
language sql stable security definer set search_path = ''
as $$ select coalesce((select a.capabilities from public.agents a where a.id = agent), '{}') $$;

-- Run by PostgREST before every request (pgrst.db_pre_request): a token that carries an agent id must
-- be a token Baton issued and nobody revoked.
create function baton_private.check_request() returns void
language plpgsql stable security definer set search_path = ''
as $$
declare
  claims jsonb := auth.jwt();
  agent text := claims ->> 'agent_id';
  token_id text := claims ->> 'jti';
  token public.agent_tokens;
begin
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
end
$$;
revoke all on function baton_private.check_request() from public;
grant execute on function baton_private.check_request() to anon, authenticated, service_role;

alter role authenticator set pgrst.db_pre_request = 'baton_private.check_request';
notify pgrst, 'reload config';

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
comment on function public.revoke_agent_tokens is 'Operator only: revokes every token of an agent at once.';

revoke all on function public.register_agent, public.issue_agent_token, public.revoke_agent_tokens from public, anon, authenticated;
grant execute on function public.register_agent, public.issue_agent_token, public.revoke_agent_tokens to service_role;

-- Agent self-service --------------------------------------------------------------------------------

revoke all on table public.agents from anon, authenticated;
grant select on table public.agents to authenticated;
grant update (display_name, capabilities, skills_offered, comms_endpoint, status_message, max_concurrent)
  on table public.agents to authenticated;
grant all on table public.agents to service_role;

create policy "Agents can see every registered agent" on public.agents
  for select to authenticated using (true);
create policy "Agents can change only their own row" on public.agents
  for update to authenticated
  using (id = (select baton_private.current_agent_id()))
  with check (id = (select baton_private.current_agent_id()));

create function public.send_heartbeat(p_status_message text default null, p_active boolean default true)
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
      status_message = coalesce(p_status_message, a.status_message)
  where a.id = me
  returning a.* into row;
  return row;
end
$$;
comment on function public.send_heartbeat is 'The calling agent says it is alive (server time), optionally with a status line; p_active = false marks a clean stop.';
revoke all on function public.send_heartbeat from public, anon;
grant execute on function public.send_heartbeat to authenticated;
