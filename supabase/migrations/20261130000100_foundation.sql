-- Foundation: the private schema, its guard, the status and priority types, the settings every rule
-- reads, and the helpers every other file calls (who is calling, the history note, slugs, batches).
--
-- The layout of the schema, one file per area (docs/architecture.md maps each rule to its function):
--   foundation        this file
--   agents            agents, their tokens, heartbeats and incarnations
--   tasks             task_handoffs, the status machine, the history table, hand-off and cancel
--   claims            claiming, leases, starting, reporting (complete, fail, decline, reject), retries
--   sweep             what the sweep re-queues, fails and schedules
--   conversation      agent_messages, questions and answers
--   artifacts         task_artifacts and inputs
--   lineage           parents, chains, follow-ups and who works on what
--   workflows         dependencies, joins, fan-out, schedules, dead letters, retention
--   history_and_push  what follows every insert and change of a task: its history and the push
--   limits_and_quotas JSON limits and per-agent quotas
--   requests          PostgREST's per-request check and the hints for direct writes
--
-- Migrations are only ever added from here on; supabase/schema.sql shows the schema they leave.

create schema if not exists baton_private;
comment on schema baton_private is 'Baton internals: helpers and trigger functions. Not exposed through the API.';
revoke all on schema baton_private from public;
grant usage on schema baton_private to anon, authenticated, service_role;
alter default privileges in schema baton_private revoke execute on functions from public;

-- Internals stay internal ----------------------------------------------------------------------------
-- Postgres grants EXECUTE on every new function to PUBLIC, and a schema's default privileges cannot take
-- that back. So every function created in baton_private has it revoked at once by an event trigger
-- (where the database allows one), and each file grants back only what row-level security, validation
-- triggers and the pre-request check call as the requesting role. Where no event trigger can be made,
-- the last file revokes it from every function here. test/hardening.test.ts checks every function.
create function baton_private.tg_revoke_public_execute() returns event_trigger
language plpgsql set search_path = ''
as $$
declare
  created record;
begin
  for created in
    select c.object_identity from pg_catalog.pg_event_trigger_ddl_commands() c
    where c.object_type in ('function', 'procedure') and c.schema_name = 'baton_private'
  loop
    execute format('revoke execute on routine %s from public', created.object_identity);
  end loop;
end
$$;

revoke execute on function baton_private.tg_revoke_public_execute() from public;


do $$
begin
  create event trigger baton_private_functions_are_private on ddl_command_end
    when tag in ('CREATE FUNCTION', 'CREATE PROCEDURE')
    execute function baton_private.tg_revoke_public_execute();
exception when insufficient_privilege then
  raise notice 'baton: no event trigger (not a superuser here); functions added to baton_private later must revoke PUBLIC execute themselves';
end
$$;


-- Types ---------------------------------------------------------------------------------------------
-- Where a task stands (the allowed changes are the rows of task_status_transitions, in tasks).
create type public.task_status as enum (
  'pending', 'claimed', 'in_progress', 'input_required', 'completed', 'failed', 'rejected', 'cancelled'
);

create type public.task_priority as enum ('low', 'medium', 'high', 'urgent');

-- Messages between agents: notes, progress, questions and answers, optionally threaded on a task.
create type public.message_kind as enum ('note', 'progress', 'question', 'answer', 'result');

comment on type public.task_status is 'Where a task stands. completed, failed, rejected and cancelled are final.';
comment on type public.task_priority is 'Claim order: urgent first, then high, medium, low; oldest first within one priority.';
comment on type public.message_kind is 'What a message is for; question and answer carry the input_required exchange of a task.';

-- Settings ------------------------------------------------------------------------------------------
-- One row, edited by an operator (Studio, or the service role); agents may read it.
create table public.baton_settings (
  id boolean not null default true,
  max_chain_depth integer not null default 5,
  offline_after interval not null default '00:05:00'::interval,
  default_lease interval not null default '00:05:00'::interval,
  retry_base_delay interval not null default '00:00:02'::interval,
  retry_max_delay interval not null default '01:00:00'::interval,
  max_json_depth integer not null default 32,
  max_json_keys integer not null default 10000,
  handoffs_per_minute integer not null default 600,
  messages_per_minute integer not null default 600,
  artifacts_per_minute integer not null default 600,
  open_tasks_per_sender integer not null default 10000,
  keep_finished interval,
  retention_batch integer not null default 500,
  constraint baton_settings_artifacts_per_minute_check CHECK ((artifacts_per_minute >= 1)),
  constraint baton_settings_default_lease_check CHECK ((default_lease > '00:00:00'::interval)),
  constraint baton_settings_handoffs_per_minute_check CHECK ((handoffs_per_minute >= 1)),
  constraint baton_settings_id_check CHECK (id),
  constraint baton_settings_keep_finished_check CHECK ((keep_finished > '00:00:00'::interval)),
  constraint baton_settings_max_chain_depth_check CHECK (((max_chain_depth >= 1) AND (max_chain_depth <= 100))),
  constraint baton_settings_max_json_depth_check CHECK (((max_json_depth >= 2) AND (max_json_depth <= 256))),
  constraint baton_settings_max_json_keys_check CHECK (((max_json_keys >= 1) AND (max_json_keys <= 100000))),
  constraint baton_settings_messages_per_minute_check CHECK ((messages_per_minute >= 1)),
  constraint baton_settings_offline_after_check CHECK ((offline_after > '00:00:00'::interval)),
  constraint baton_settings_open_tasks_per_sender_check CHECK ((open_tasks_per_sender >= 1)),
  constraint baton_settings_pkey PRIMARY KEY (id),
  constraint baton_settings_retention_batch_check CHECK (((retention_batch >= 1) AND (retention_batch <= 100000))),
  constraint baton_settings_retry_base_delay_check CHECK ((retry_base_delay >= '00:00:00'::interval)),
  constraint baton_settings_retry_max_delay_check CHECK ((retry_max_delay >= '00:00:00'::interval))
);
alter table public.baton_settings enable row level security;

revoke all on table public.baton_settings from anon, authenticated;
grant select on table public.baton_settings to authenticated;
grant all on table public.baton_settings to service_role;

comment on table public.baton_settings is 'One row of operator settings that Baton''s rules read. Edit it here; agents cannot.';
comment on column public.baton_settings.max_chain_depth is 'Loop guard: how deep a chain of hand-offs (parent to child) may go.';
comment on column public.baton_settings.offline_after is 'An agent whose last heartbeat is older than this counts as offline.';
comment on column public.baton_settings.default_lease is 'How long a claim holds before the sweep may re-queue it, unless the claim asks for another.';
comment on column public.baton_settings.retry_base_delay is 'A retried task waits about this long after its first failure, doubling with each attempt (with jitter).';
comment on column public.baton_settings.retry_max_delay is 'The longest a retried task waits before it may be claimed again.';
comment on column public.baton_settings.max_json_depth is 'How deeply any stored JSON (payload, result, problems, message body, skills) may nest.';
comment on column public.baton_settings.max_json_keys is 'How many keys one JSON object, or items one JSON array, may hold.';
comment on column public.baton_settings.handoffs_per_minute is 'How many tasks one agent may hand off (follow-ups included) in one clock minute.';
comment on column public.baton_settings.messages_per_minute is 'How many notes and progress reports one agent may send in one clock minute (results, questions and answers are not counted).';
comment on column public.baton_settings.artifacts_per_minute is 'How many artifacts one agent may attach in one clock minute.';
comment on column public.baton_settings.open_tasks_per_sender is 'How many of one agent''s tasks may be open (not final) at once.';
comment on column public.baton_settings.keep_finished is 'How long finished chains (every task in them final), with their events, messages and artifacts, are kept after the last of them finished; null keeps them forever. The sweep deletes what is past it, in batches.';
comment on column public.baton_settings.retention_batch is 'At most this many tasks are deleted per sweep, so a sweep stays short.';

insert into public.baton_settings default values;

create policy "Agents can read the settings" on public.baton_settings
  for select to authenticated using (true);

-- The settings row, read by nearly every rule: PL/pgSQL keeps the plan of its one query for the
-- session, where a SQL function that reads a table (never inlined) plans it again on every call.
create function baton_private.settings() returns public.baton_settings
language plpgsql stable
as $$
declare
  s public.baton_settings;
begin
  select * into s from public.baton_settings where id;
  return s;
end
$$;

grant execute on function baton_private.settings() to authenticated, service_role;

-- The smallest helpers run tens of thousands of times an hour on a busy project: inside every policy
-- check, trigger and RPC. A SQL function with a SET clause or SECURITY DEFINER cannot be inlined and
-- pays for a search_path switch on every call (about 0.1 ms each, measured with track_functions under
-- bench:throughput). These name their functions fully (pg_catalog, searched first, supplies the rest) and
-- run with the caller's rights, which suffice: anyone may read their own request's settings.
create function baton_private.current_agent_id() returns text
language sql stable
as $$ select nullif(auth.jwt() ->> 'agent_id', '') $$;

grant execute on function baton_private.current_agent_id() to anon, authenticated, service_role;

-- RPCs that only an agent may call start here.
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

-- Who a history row names: what the operator set as baton.actor, else the agent calling, else the role.
create function baton_private.event_actor() returns text
language sql stable
as $$
  select coalesce(nullif(pg_catalog.current_setting('baton.actor', true), ''), baton_private.current_agent_id(),
                  nullif(auth.role(), ''), session_user)
$$;

revoke execute on function baton_private.event_actor() from public, anon, authenticated;

-- Bounded notes ---------------------------------------------------------------------------------------
-- Every reason reaches task_events.note through here; the history keeps the first 2,000 characters.
create function baton_private.set_note(note text) returns void
language sql set search_path = ''
as $$ select set_config('baton.note', left(coalesce(note, ''), 2000), true) $$;

-- Agent ids and capabilities are slugs. An SQL function without SET or SECURITY DEFINER: PostgreSQL
-- inlines it into its callers (a call of its own costs more than the test).
create function baton_private.is_slug(value text) returns boolean
language sql immutable
as $$ select value operator(pg_catalog.~) '^[a-z0-9][a-z0-9._:-]{0,62}$' $$;

grant execute on function baton_private.is_slug(text) to anon, authenticated, service_role;

-- A reason, question or answer that must say something.
create function baton_private.require_text(value text, what text, hint text) returns void
language plpgsql immutable set search_path = ''
as $$
begin
  if value is null or btrim(value) = '' then
    raise exception '% cannot be empty', what using errcode = 'BT005', hint = hint;
  end if;
end
$$;

-- Set by the batch RPCs around an INSERT of many tasks, whose quota they count once for the batch.
create function baton_private.in_batch() returns boolean
language sql stable
as $$ select coalesce(pg_catalog.current_setting('baton.batch', true), '') = 'on' $$;

revoke execute on function baton_private.in_batch() from public, anon, authenticated;
