-- Tasks handed from one agent to another, the rules of their status, and their history.

create type public.task_status as enum (
  'pending', 'claimed', 'in_progress', 'input_required', 'completed', 'failed', 'rejected', 'cancelled'
);
comment on type public.task_status is 'Where a task stands. completed, failed, rejected and cancelled are final.';

create type public.task_priority as enum ('low', 'medium', 'high', 'urgent');
comment on type public.task_priority is 'Claim order: urgent first, then high, medium, low; oldest first within one priority.';

-- Allowed status changes ----------------------------------------------------------------------------

create table public.task_status_transitions (
  from_status public.task_status not null,
  to_status public.task_status not null,
  meaning text not null,
  primary key (from_status, to_status)
);
alter table public.task_status_transitions enable row level security;
comment on table public.task_status_transitions is 'Every status change a task may make; the transition trigger refuses any other, for every writer.';
insert into public.task_status_transitions (from_status, to_status, meaning) values
  ('pending', 'claimed', 'an agent claimed it'),
  ('pending', 'rejected', 'the addressee declined it'),
  ('pending', 'cancelled', 'the sender withdrew it'),
  ('claimed', 'in_progress', 'the holder started it'),
  ('claimed', 'pending', 'released by the holder or re-queued'),
  ('claimed', 'cancelled', 'the sender withdrew it'),
  ('in_progress', 'completed', 'the holder finished it'),
  ('in_progress', 'failed', 'the holder gave up, or it ran out of attempts'),
  ('in_progress', 'pending', 'released by the holder or re-queued'),
  ('in_progress', 'input_required', 'the holder asked the sender a question'),
  ('in_progress', 'cancelled', 'the sender withdrew it'),
  ('input_required', 'in_progress', 'the sender answered'),
  ('input_required', 'cancelled', 'the sender withdrew it');
revoke all on table public.task_status_transitions from anon, authenticated;
grant select on table public.task_status_transitions to authenticated;
grant select on table public.task_status_transitions to service_role;
create policy "Agents can read the allowed transitions" on public.task_status_transitions
  for select to authenticated using (true);

-- Tasks ---------------------------------------------------------------------------------------------

create table public.task_handoffs (
  id uuid primary key default gen_random_uuid(),
  from_agent text not null references public.agents (id),
  to_agent text references public.agents (id),
  required_capabilities text[] not null default '{}',
  title text not null,
  description text,
  priority public.task_priority not null default 'medium',
  status public.task_status not null default 'pending',
  status_reason text,
  payload jsonb not null default '{}',
  expected_outputs jsonb not null default '[]',
  input_artifacts jsonb not null default '[]',
  result jsonb,
  problems jsonb,
  progress_message text,
  progress_percent integer,
  progress_at timestamptz,
  claimed_by text references public.agents (id),
  claim_token uuid,
  claimed_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  lease_expires_at timestamptz,
  lease_seconds integer,
  not_before timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  parent_task_id uuid references public.task_handoffs (id),
  root_task_id uuid references public.task_handoffs (id),
  depth integer not null default 0,
  deadline timestamptz,
  idempotency_key text,
  attempts integer not null default 0,
  max_attempts integer not null default 3,
  constraint task_handoffs_holder_matches_status check (
    (status not in ('claimed', 'in_progress', 'input_required') or claimed_by is not null)
    and (status <> 'pending' or claimed_by is null)
  ),
  constraint task_handoffs_idempotency_key_per_sender unique (from_agent, idempotency_key)
);
alter table public.task_handoffs enable row level security;
comment on table public.task_handoffs is 'Work handed from one agent to another (to_agent) or offered to every capable agent (to_agent null). Status changes only through the RPC functions and only along task_status_transitions.';
comment on column public.task_handoffs.from_agent is 'The sender: always the agent whose token created the task, never self-reported.';
comment on column public.task_handoffs.to_agent is 'The addressee. Null makes it a broadcast: any agent holding all required_capabilities may claim it.';
comment on column public.task_handoffs.required_capabilities is 'Capabilities a claimer of a broadcast must hold, all of them.';
comment on column public.task_handoffs.status_reason is 'Why the task last changed status, when someone said: a rejection or cancellation reason, or the error it failed with.';
comment on column public.task_handoffs.payload is 'The work itself, a JSON object (at most 256 KiB). payload.task_type chooses the executor.';
comment on column public.task_handoffs.expected_outputs is 'Artifacts the task must produce: [{name, media_type, required, json_schema}]. Completing without a required one is refused.';
comment on column public.task_handoffs.input_artifacts is 'Artifacts of earlier tasks this one works from: [{task_id, name}]. Its holder receives them resolved and hash-checked.';
comment on column public.task_handoffs.problems is 'What was wrong with the last attempt''s outputs: [{path, message}]. The next attempt''s executor receives them.';
comment on column public.task_handoffs.result is 'What the holder reported on completion: {status: success|partial|failed, summary, artifacts: [{name, path|url}], metrics: {}} (at most 256 KiB).';
comment on column public.task_handoffs.progress_message is 'The holder''s latest progress report; each report also reaches the sender as a progress message.';
comment on column public.task_handoffs.progress_percent is 'How far along the holder says it is, 0 to 100, when it says.';
comment on column public.task_handoffs.claimed_by is 'The agent holding (or last holding) the task.';
comment on column public.task_handoffs.claim_token is 'Fencing token of the current claim: complete, fail and release must present it, so a holder whose claim was lost cannot overwrite the new holder''s outcome.';
comment on column public.task_handoffs.lease_expires_at is 'When the current claim lapses unless renewed; after it the task may be re-queued.';
comment on column public.task_handoffs.lease_seconds is 'How long a claim on this task holds unless renewed; null means baton_settings.default_lease.';
comment on column public.task_handoffs.not_before is 'A task retried after a failure is not claimed again before this (exponential backoff with jitter).';
comment on column public.task_handoffs.parent_task_id is 'The task within which this one was handed off.';
comment on column public.task_handoffs.root_task_id is 'The first task of the chain this one belongs to (itself for a task with no parent).';
comment on column public.task_handoffs.depth is 'How many hand-offs deep in its chain (0 for a root); capped by baton_settings.max_chain_depth.';
comment on column public.task_handoffs.deadline is 'After this a pending task is cancelled. Never later than the parent''s deadline.';
comment on column public.task_handoffs.idempotency_key is 'Unique per sender: handing off again with the same key returns the first task.';
comment on column public.task_handoffs.attempts is 'How many times the task has been claimed for work (a claim handed back by release does not count).';
comment on column public.task_handoffs.max_attempts is 'After this many attempts a task that fails or loses its lease fails for good.';

-- Claim paths read only open tasks, so these stay small however much history accumulates.
create index task_handoffs_claimable_direct_idx on public.task_handoffs (to_agent, priority desc, created_at)
  where status = 'pending';
create index task_handoffs_claimable_broadcast_idx on public.task_handoffs (priority desc, created_at)
  where status = 'pending' and to_agent is null;
create index task_handoffs_held_idx on public.task_handoffs (claimed_by)
  where status in ('claimed', 'in_progress', 'input_required');
-- The inbox (open tasks addressed to an agent), however many finished ones it has behind it.
create index task_handoffs_open_to_agent_idx on public.task_handoffs (to_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required');
create index task_handoffs_leases_idx on public.task_handoffs (lease_expires_at)
  where status in ('claimed', 'in_progress');
create index task_handoffs_deadlines_idx on public.task_handoffs (deadline)
  where status = 'pending' and deadline is not null;
-- A sender's tasks in the order `baton tasks --sent` lists them.
create index task_handoffs_from_agent_idx on public.task_handoffs (from_agent, priority desc, created_at);
create index task_handoffs_to_agent_idx on public.task_handoffs (to_agent, created_at desc);
create index task_handoffs_parent_idx on public.task_handoffs (parent_task_id) where parent_task_id is not null;
create index task_handoffs_root_idx on public.task_handoffs (root_task_id);

-- The protocol's result: {status: success|partial|failed, summary, artifacts: [{name, path|url, ...}], metrics}.
create function baton_private.check_result(result jsonb) returns void
language plpgsql immutable set search_path = ''
as $$
declare
  artifact jsonb;
  i integer := 0;
  example constant text := 'Report e.g. {"status": "success", "summary": "what was done", "artifacts": [{"name": "report.md", "path": "out/report.md"}], "metrics": {}}.';
begin
  if jsonb_typeof(result) <> 'object' then
    raise exception 'a result must be a JSON object, not %', jsonb_typeof(result) using errcode = 'BT005', hint = example;
  end if;
  if coalesce(result ->> 'status', '') not in ('success', 'partial', 'failed') or jsonb_typeof(result -> 'status') <> 'string' then
    raise exception 'result.status must be "success", "partial" or "failed"' using errcode = 'BT005', hint = example;
  end if;
  if result ? 'summary' and jsonb_typeof(result -> 'summary') not in ('string', 'null') then
    raise exception 'result.summary must be a string' using errcode = 'BT005', hint = example;
  end if;
  if result ? 'metrics' and jsonb_typeof(result -> 'metrics') not in ('object', 'null') then
    raise exception 'result.metrics must be an object' using errcode = 'BT005', hint = example;
  end if;
  if result ? 'handoff' and (
       jsonb_typeof(result -> 'handoff') <> 'object'
       or jsonb_typeof(result -> 'handoff' -> 'title') is distinct from 'string'
       or not coalesce(jsonb_typeof(result -> 'handoff' -> 'to_agent') = 'string'
                       or jsonb_typeof(result -> 'handoff' -> 'capability') in ('string', 'array'), false)) then
    raise exception 'result.handoff needs a "title" and a "to_agent" or "capability"' using errcode = 'BT005',
      hint = 'Request a follow-up as {"handoff": {"to_agent": "coder", "title": "...", "reason": "...", "context": {}}}.';
  end if;
  if result ? 'artifacts' then
    if jsonb_typeof(result -> 'artifacts') <> 'array' then
      raise exception 'result.artifacts must be an array' using errcode = 'BT005', hint = example;
    end if;
    for artifact in select value from jsonb_array_elements(result -> 'artifacts') loop
      if jsonb_typeof(artifact) <> 'object' or jsonb_typeof(artifact -> 'name') is distinct from 'string'
         or not (jsonb_typeof(artifact -> 'path') = 'string' or jsonb_typeof(artifact -> 'url') = 'string') then
        raise exception 'result.artifacts[%] needs a "name" and a "path" or "url"', i using errcode = 'BT005', hint = example;
      end if;
      i := i + 1;
    end loop;
  end if;
end
$$;

-- Artifact names are file names: letters, digits, dot, dash and underscore.
create function baton_private.is_artifact_name(value text) returns boolean
language sql immutable set search_path = ''
as $$ select value ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$' $$;

create function baton_private.check_expected_outputs(outputs jsonb) returns void
language plpgsql immutable set search_path = ''
as $$
declare
  output jsonb;
  example constant text := 'Declare e.g. [{"name": "report.json", "media_type": "application/json", "required": true, "json_schema": {...}}].';
begin
  if jsonb_typeof(outputs) <> 'array' or jsonb_array_length(outputs) > 32 then
    raise exception 'expected_outputs must be an array of at most 32 outputs' using errcode = 'BT005', hint = example;
  end if;
  for output in select value from jsonb_array_elements(outputs) loop
    if jsonb_typeof(output) <> 'object' or jsonb_typeof(output -> 'name') is distinct from 'string'
       or not baton_private.is_artifact_name(output ->> 'name') then
      raise exception 'each expected output needs a "name" that is a file name, got %', left(output::text, 100) using errcode = 'BT005', hint = example;
    end if;
    if output ? 'required' and jsonb_typeof(output -> 'required') <> 'boolean'
       or output ? 'media_type' and jsonb_typeof(output -> 'media_type') <> 'string'
       or output ? 'json_schema' and jsonb_typeof(output -> 'json_schema') <> 'object' then
      raise exception 'expected output "%": required must be a boolean, media_type a string, json_schema an object', output ->> 'name'
        using errcode = 'BT005', hint = example;
    end if;
  end loop;
end
$$;

create function baton_private.check_lease(seconds integer) returns void
language plpgsql immutable set search_path = ''
as $$
begin
  if seconds not between 5 and 86400 then
    raise exception 'a lease must be between 5 seconds and 1 day, got % seconds', seconds
      using errcode = 'BT005', hint = 'Ask for a lease a little longer than the work takes between heartbeats.';
  end if;
end
$$;

create function baton_private.tg_task_handoffs__validate() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if new.title is null or btrim(new.title) = '' then
    raise exception 'a task needs a title' using errcode = 'BT005', hint = 'Give a short, non-empty title.';
  end if;
  if length(new.title) > 200 then
    raise exception 'the title is % characters long; the limit is 200', length(new.title)
      using errcode = 'BT005', hint = 'Shorten the title and put the detail in the description.';
  end if;
  if length(new.description) > 20000 then
    raise exception 'the description is % characters long; the limit is 20000', length(new.description)
      using errcode = 'BT005', hint = 'Put long material in the payload or link it.';
  end if;
  if jsonb_typeof(new.payload) <> 'object' then
    raise exception 'the payload must be a JSON object, not %', jsonb_typeof(new.payload)
      using errcode = 'BT005', hint = 'Wrap the value, e.g. {"input": ...}.';
  end if;
  if octet_length(new.payload::text) > 262144 then
    raise exception 'the payload is % bytes; the limit is 256 KiB', octet_length(new.payload::text)
      using errcode = 'BT005', hint = 'Store large inputs elsewhere and pass a link in the payload.';
  end if;
  if new.expected_outputs is distinct from old.expected_outputs then
    perform baton_private.check_expected_outputs(new.expected_outputs);
  end if;
  if new.result is not null and new.result is distinct from old.result then
    perform baton_private.check_result(new.result);
  end if;
  if octet_length(new.result::text) > 262144 then
    raise exception 'the result is % bytes; the limit is 256 KiB', octet_length(new.result::text)
      using errcode = 'BT005', hint = 'Store large outputs elsewhere and put a link in the result.';
  end if;
  if cardinality(new.required_capabilities) > 32
     or exists (select from unnest(new.required_capabilities) c where c is null or not baton_private.is_slug(c)) then
    raise exception 'invalid required capabilities'
      using errcode = 'BT005',
            hint = 'Give at most 32 capabilities, each 1 to 63 lower-case letters, digits, ., :, - or _.';
  end if;
  if length(new.idempotency_key) > 200 or new.idempotency_key = '' then
    raise exception 'an idempotency key must be 1 to 200 characters'
      using errcode = 'BT005', hint = 'Use a short unique string, e.g. a hash of the request.';
  end if;
  if new.max_attempts is null or new.max_attempts not between 1 and 100 then
    raise exception 'max_attempts must be between 1 and 100, got %', new.max_attempts
      using errcode = 'BT005', hint = 'Use a small number such as 3.';
  end if;
  perform baton_private.check_lease(new.lease_seconds);
  if new.progress_percent not between 0 and 100 then
    raise exception 'progress must be a percentage from 0 to 100, got %', new.progress_percent
      using errcode = 'BT005', hint = 'Give a whole number such as 40.';
  end if;
  if length(new.progress_message) > 2000 then
    new.progress_message := left(new.progress_message, 2000);
  end if;
  if length(new.status_reason) > 4000 then
    new.status_reason := left(new.status_reason, 4000);
  end if;
  return new;
end
$$;

-- Whatever a writer sends, a new task starts pending, unclaimed, and placed in its chain.
create function baton_private.tg_task_handoffs__prepare_insert() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  parent public.task_handoffs;
  max_depth integer := (baton_private.settings()).max_chain_depth;
begin
  new.status := 'pending';
  new.claimed_by := null;
  new.claim_token := null;
  new.claimed_at := null;
  new.started_at := null;
  new.completed_at := null;
  new.lease_expires_at := null;
  new.result := null;
  new.attempts := 0;
  new.not_before := null;
  new.created_at := now();
  new.updated_at := now();
  if new.deadline is not null and new.deadline <= now() then
    raise exception 'the deadline % is already past', new.deadline
      using errcode = 'BT005', hint = 'Give a deadline in the future, or none.';
  end if;
  if new.parent_task_id is null then
    new.depth := 0;
    new.root_task_id := new.id;
  else
    select * into parent from public.task_handoffs t where t.id = new.parent_task_id;
    if not found then
      raise exception 'no parent task %', new.parent_task_id
        using errcode = 'BT002', hint = 'Name an existing task as the parent, or none.';
    end if;
    new.depth := parent.depth + 1;
    new.root_task_id := parent.root_task_id;
    if new.depth > max_depth then
      raise exception 'handing off task % would make a chain % deep; the limit is %', parent.id, new.depth, max_depth
        using errcode = 'BT009',
              hint = 'Finish the work within this task instead of handing it on; an operator can raise baton_settings.max_chain_depth.';
    end if;
    if parent.deadline is not null then
      new.deadline := least(coalesce(new.deadline, parent.deadline), parent.deadline);
    end if;
  end if;
  return new;
end
$$;

create function baton_private.tg_task_handoffs__transition() returns trigger
language plpgsql set search_path = ''
as $$
declare
  allowed text;
begin
  if new.id <> old.id or new.from_agent <> old.from_agent or new.created_at <> old.created_at
     or new.parent_task_id is distinct from old.parent_task_id or new.root_task_id is distinct from old.root_task_id
     or new.depth <> old.depth or new.idempotency_key is distinct from old.idempotency_key then
    raise exception 'the identity, sender and chain of task % cannot change', old.id
      using errcode = 'BT005', hint = 'Hand off a new task instead.';
  end if;

  if new.status is distinct from old.status then
    if not exists (
      select from public.task_status_transitions tr
      where tr.from_status = old.status and tr.to_status = new.status
    ) then
      select string_agg(tr.to_status::text, ', ' order by tr.to_status) into allowed
      from public.task_status_transitions tr where tr.from_status = old.status;
      raise exception 'task % is %; it cannot become %', old.id, old.status, new.status
        using errcode = 'BT001',
              hint = case when allowed is null then format('%s is final: nothing can change it.', old.status)
                          else format('From %s a task may become: %s.', old.status, allowed) end;
    end if;

    case new.status
      when 'claimed' then
        new.claimed_at := now();
        new.started_at := null;
      when 'in_progress' then
        new.started_at := coalesce(new.started_at, now());
      when 'pending' then
        new.claimed_by := null;
        new.claim_token := null;
        new.claimed_at := null;
        new.started_at := null;
        new.lease_expires_at := null;
        new.progress_message := null;
        new.progress_percent := null;
        new.progress_at := null;
      when 'completed', 'failed', 'rejected', 'cancelled' then
        new.completed_at := now();
        new.lease_expires_at := null;
        new.claim_token := null;
      else
        null;
    end case;
  end if;
  new.updated_at := now();
  return new;
end
$$;

create trigger prepare_insert before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__prepare_insert();
create trigger transition before update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__transition();
create trigger validate before insert or update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__validate();

-- History -------------------------------------------------------------------------------------------

create table public.task_events (
  id bigint generated always as identity primary key,
  task_id uuid not null references public.task_handoffs (id) on delete cascade,
  actor text not null,
  from_status public.task_status,
  to_status public.task_status not null,
  note text,
  at timestamptz not null default now()
);
alter table public.task_events enable row level security;
comment on table public.task_events is 'Append-only history: one row for every status a task has taken, written by a trigger.';
comment on column public.task_events.actor is 'The agent that made the change, or the database role (service_role, postgres) when no agent did.';
comment on column public.task_events.from_status is 'Null for the row that records the task''s creation.';
comment on column public.task_events.note is 'A reason given with the change: a rejection or cancellation reason, an error, a re-queue cause.';
create index task_events_task_idx on public.task_events (task_id, at);

create function baton_private.tg_task_handoffs__record_event() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.status is distinct from old.status then
    insert into public.task_events (task_id, actor, from_status, to_status, note)
    values (
      new.id,
      coalesce(nullif(current_setting('baton.actor', true), ''), baton_private.current_agent_id(), nullif(auth.role(), ''), session_user),
      case when tg_op = 'UPDATE' then old.status end,
      new.status,
      nullif(current_setting('baton.note', true), '')
    );
  end if;
  return null;
end
$$;

create trigger record_event after insert or update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__record_event();

create function baton_private.tg_task_events__append_only() returns trigger
language plpgsql set search_path = ''
as $$
begin
  raise exception 'task history is append-only' using errcode = 'BT003',
    hint = 'Record a correction as a new status change instead.';
end
$$;
create trigger append_only before update on public.task_events
  for each row execute function baton_private.tg_task_events__append_only();

-- Who sees what -------------------------------------------------------------------------------------

revoke all on table public.task_handoffs from anon, authenticated;
grant select on table public.task_handoffs to authenticated;
grant select, insert, update, delete on table public.task_handoffs to service_role;

revoke all on table public.task_events from anon, authenticated;
grant select on table public.task_events to authenticated;
grant select on table public.task_events to service_role;

-- The same rule as baton_private.can_see_task, written out so that the planner can use the indexes.
create policy "Agents can view tasks they sent, hold, are addressed, or could claim" on public.task_handoffs
  for select to authenticated
  using (
    from_agent = (select baton_private.current_agent_id())
    or to_agent = (select baton_private.current_agent_id())
    or claimed_by = (select baton_private.current_agent_id())
    or (to_agent is null
        and required_capabilities <@ (select baton_private.agent_capabilities(baton_private.current_agent_id())))
  );

create policy "Agents can view the history of tasks they can view" on public.task_events
  for select to authenticated
  using (exists (select from public.task_handoffs t where t.id = task_id));

create function baton_private.can_see_task(t public.task_handoffs, agent text) returns boolean
language sql stable set search_path = ''
as $$
  select coalesce(
    t.from_agent = agent or t.to_agent = agent or t.claimed_by = agent
    or (t.to_agent is null and t.required_capabilities <@ baton_private.agent_capabilities(agent)),
    false)
$$;
