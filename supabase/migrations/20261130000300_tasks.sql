-- Tasks: the task_handoffs table, the status machine that every change of a task passes, the history
-- of each task, who may see a task, and the RPCs that hand work off, cancel and reassign it.
--
-- The triggers on task_handoffs, in the order they run. PostgreSQL runs the triggers of one event in the
-- alphabetical order of their names, so a BEFORE trigger's name starts with its step:
--   before insert  step1_limit_json (limits_and_quotas), step2_prepare_insert (here), step3_quota
--                  (limits_and_quotas), step4_validate (here), step5_wait_on_dependencies (workflows,
--                  only with dependencies or run_at)
--   before update  step1_keep_dependencies (workflows, when they change), step2_limit_json_on_change
--                  (limits_and_quotas), step3_transition (here), step4_validate_on_change (here)
--   after insert   follow_insert (history_and_push), once per statement
--   after update   follow_change (history_and_push), once per statement
-- The other tables with more than one BEFORE trigger (agents, agent_messages, task_artifacts) name
-- theirs the same way.

-- The status machine ----------------------------------------------------------------------------------
-- Every allowed change of status is a row here: the transition trigger refuses any other, whoever makes
-- it (an RPC, the sweep, or an operator in Studio).
create table public.task_status_transitions (
  from_status public.task_status not null,
  to_status public.task_status not null,
  meaning text not null,
  constraint task_status_transitions_pkey PRIMARY KEY (from_status, to_status)
);
alter table public.task_status_transitions enable row level security;

revoke all on table public.task_status_transitions from anon, authenticated;
grant select on table public.task_status_transitions to authenticated;
grant select on table public.task_status_transitions to service_role;

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
  ('input_required', 'cancelled', 'the sender withdrew it'),
  -- Claiming and starting in one status change (claim_next_tasks with p_start).
  ('pending', 'in_progress', 'an agent claimed it and started at once');

-- Tasks ---------------------------------------------------------------------------------------------
create table public.task_handoffs (
  id uuid not null default gen_random_uuid(),
  from_agent text not null,
  to_agent text,
  required_capabilities text[] not null default '{}'::text[],
  title text not null,
  description text,
  priority public.task_priority not null default 'medium'::public.task_priority,
  status public.task_status not null default 'pending'::public.task_status,
  status_reason text,
  payload jsonb not null default '{}'::jsonb,
  expected_outputs jsonb not null default '[]'::jsonb,
  input_artifacts jsonb not null default '[]'::jsonb,
  result jsonb,
  problems jsonb,
  progress_message text,
  progress_percent integer,
  progress_at timestamp with time zone,
  claimed_by text,
  claim_token uuid,
  claimed_at timestamp with time zone,
  started_at timestamp with time zone,
  completed_at timestamp with time zone,
  lease_expires_at timestamp with time zone,
  lease_seconds integer,
  not_before timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  parent_task_id uuid,
  root_task_id uuid,
  depth integer not null default 0,
  deadline timestamp with time zone,
  idempotency_key text,
  attempts integer not null default 0,
  max_attempts integer not null default 3,
  claim_lease interval,
  depends_on uuid[] not null default '{}'::uuid[],
  dependency_mode text not null default 'all'::text,
  on_dependency_failure text not null default 'cancel'::text,
  waiting_on integer not null default 0,
  run_at timestamp with time zone,
  retry_of uuid,
  recurring_id uuid,
  recurrence_slot timestamp with time zone,
  constraint task_handoffs_claimed_by_fkey FOREIGN KEY (claimed_by) REFERENCES public.agents(id),
  constraint task_handoffs_dependency_mode_check CHECK ((dependency_mode = ANY (ARRAY['all'::text, 'any'::text]))),
  constraint task_handoffs_from_agent_fkey FOREIGN KEY (from_agent) REFERENCES public.agents(id),
  constraint task_handoffs_holder_matches_status CHECK ((((status <> ALL (ARRAY['claimed'::public.task_status, 'in_progress'::public.task_status, 'input_required'::public.task_status])) OR (claimed_by IS NOT NULL)) AND ((status <> 'pending'::public.task_status) OR (claimed_by IS NULL)))),
  constraint task_handoffs_on_dependency_failure_check CHECK ((on_dependency_failure = ANY (ARRAY['cancel'::text, 'run'::text]))),
  constraint task_handoffs_parent_task_id_fkey FOREIGN KEY (parent_task_id) REFERENCES public.task_handoffs(id),
  constraint task_handoffs_pkey PRIMARY KEY (id),
  constraint task_handoffs_retry_of_fkey FOREIGN KEY (retry_of) REFERENCES public.task_handoffs(id) ON DELETE SET NULL,
  constraint task_handoffs_root_task_id_fkey FOREIGN KEY (root_task_id) REFERENCES public.task_handoffs(id),
  constraint task_handoffs_to_agent_fkey FOREIGN KEY (to_agent) REFERENCES public.agents(id),
  constraint task_handoffs_waiting_on_check CHECK ((waiting_on >= 0))
);
alter table public.task_handoffs enable row level security;

revoke all on table public.task_handoffs from anon, authenticated;
grant select on table public.task_handoffs to authenticated;
grant select, insert, update, delete on table public.task_handoffs to service_role;

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
comment on column public.task_handoffs.lease_expires_at is 'When the lease of the current claim, as granted or last renewed, runs out. The claim itself holds longer while its holder keeps being heard from: see baton_private.claim_expires_at.';
comment on column public.task_handoffs.lease_seconds is 'How long a claim on this task holds unless renewed; null means baton_settings.default_lease.';
comment on column public.task_handoffs.not_before is 'A task retried after a failure is not claimed again before this (exponential backoff with jitter).';
comment on column public.task_handoffs.parent_task_id is 'The task within which this one was handed off.';
comment on column public.task_handoffs.root_task_id is 'The first task of the chain this one belongs to (itself for a task with no parent).';
comment on column public.task_handoffs.depth is 'How many hand-offs deep in its chain (0 for a root); capped by baton_settings.max_chain_depth.';
comment on column public.task_handoffs.deadline is 'After this a pending task is cancelled. Never later than the parent''s deadline.';
comment on column public.task_handoffs.idempotency_key is 'Unique per sender: handing off again with the same key returns the first task.';
comment on column public.task_handoffs.attempts is 'How many times the task has been claimed for work (a claim handed back by release does not count).';
comment on column public.task_handoffs.max_attempts is 'After this many attempts a task that fails or loses its lease fails for good.';
comment on column public.task_handoffs.claim_lease is 'How long the current claim holds while its holder is unheard: the lease asked for at claim time, else lease_seconds, else baton_settings.default_lease.';
comment on column public.task_handoffs.depends_on is 'Tasks this one waits for: it is not claimable until they complete (all of them, or the first one with dependency_mode any). Their results and artifacts are its inputs. Set at hand-off, never changed.';
comment on column public.task_handoffs.dependency_mode is 'all: wait for every task in depends_on to complete; any: the first to complete releases this task (a "first success wins" join) and the others are cancelled.';
comment on column public.task_handoffs.on_dependency_failure is 'cancel: a dependency that fails (or is cancelled or rejected) cancels this task, with the reason; run: it runs anyway once the others are done.';
comment on column public.task_handoffs.waiting_on is 'How many of depends_on are still unresolved; while above 0 the task is pending but not claimable (not_before is infinity).';
comment on column public.task_handoffs.run_at is 'Not claimable before this time (a scheduled task); once its dependencies are done it waits for this too.';
comment on column public.task_handoffs.retry_of is 'The failed task this one is a new attempt of (baton retry).';
comment on column public.task_handoffs.recurring_id is 'The recurring hand-off that made this task, if any.';
comment on column public.task_handoffs.recurrence_slot is 'The schedule slot it was made for: one task per slot.';

-- History -------------------------------------------------------------------------------------------
create table public.task_events (
  id bigint not null generated always as identity,
  task_id uuid not null,
  actor text not null,
  from_status public.task_status,
  to_status public.task_status not null,
  note text,
  at timestamp with time zone not null default now(),
  constraint task_events_pkey PRIMARY KEY (id),
  constraint task_events_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.task_handoffs(id) ON DELETE CASCADE
);
alter table public.task_events enable row level security;

revoke all on table public.task_events from anon, authenticated;
grant select on table public.task_events to authenticated;
grant select on table public.task_events to service_role;

comment on table public.task_events is 'Append-only history: one row for every status a task has taken, written by a trigger.';
comment on column public.task_events.actor is 'The agent that made the change, or the database role (service_role, postgres) when no agent did.';
comment on column public.task_events.from_status is 'Null for the row that records the task''s creation.';
comment on column public.task_events.note is 'A reason given with the change: a rejection or cancellation reason, an error, a re-queue cause.';

-- A sender's tasks in the order `baton tasks --sent` lists them.
create index task_handoffs_from_agent_idx on public.task_handoffs (from_agent, priority desc, created_at);

create index task_events_task_idx on public.task_events (task_id, at);

-- The open-task quota's recount (limits_and_quotas) reads only open tasks, however much history a
-- sender has.
create index task_handoffs_open_from_agent_idx on public.task_handoffs (from_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required');

create unique index task_handoffs_idempotency_key_per_sender on public.task_handoffs (from_agent, idempotency_key)
  where idempotency_key is not null;

create index task_handoffs_to_agent_idx on public.task_handoffs (to_agent, created_at desc) where to_agent is not null;

create index task_handoffs_open_to_agent_idx on public.task_handoffs (to_agent, priority desc, created_at)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and to_agent is not null;

-- The transition rule, checked without a query per row.
--
-- The transition trigger runs for every status change (two per task: its claim and its end). Looking up
-- task_status_transitions with a query for each row, under a search_path of its own (which Postgres
-- sets and restores on every call), cost 69-76 µs of Postgres per task (track_functions, a
-- claim-and-report loop of 10 per call); compiled as below, 25-27, and a claim and completion went
-- from 1.17-1.22 to 1.04-1.09 ms.
--
-- task_status_transitions stays the rule: baton_private.transition_allowed() is compiled from it, one
-- CASE over the from-status, and compiled again by a trigger whenever the table changes. It is a SQL
-- function that PostgreSQL inlines into the trigger's expression; replacing it invalidates the plans
-- that inlined it, in every session. The trigger runs with its caller's rights and names what it
-- calls in full, so it needs no search_path of its own.
create function baton_private.compile_transitions() returns void
language plpgsql security definer set search_path = ''
as $$
declare
  cases text;
begin
  select coalesce(string_agg(pg_catalog.format('when %L then to_status in (%s)', f.from_status, f.targets), ' ' order by f.from_status), '')
  into cases
  from (
    select tr.from_status, string_agg(pg_catalog.format('%L::public.task_status', tr.to_status), ', ' order by tr.to_status) as targets
    from public.task_status_transitions tr
    group by tr.from_status
  ) f;
  execute pg_catalog.format($ddl$
    create or replace function baton_private.transition_allowed(from_status public.task_status, to_status public.task_status)
    returns boolean language sql stable parallel safe
    as $body$ select %s $body$
  $ddl$, case when cases = '' then 'false' -- an empty table allows no change at all
              else pg_catalog.format('coalesce(case from_status %s else false end, false)', cases) end);
end
$$;

revoke all on function baton_private.compile_transitions() from public, anon, authenticated;

select baton_private.compile_transitions();

grant execute on function baton_private.transition_allowed(public.task_status, public.task_status) to service_role;
comment on function baton_private.transition_allowed is 'Whether task_status_transitions allows a task to go from from_status to to_status; compiled from that table (baton_private.compile_transitions) whenever it changes.';

create function baton_private.tg_task_status_transitions__compile() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  perform baton_private.compile_transitions();
  return null;
end
$$;

revoke all on function baton_private.tg_task_status_transitions__compile() from public, anon, authenticated;

-- A new task reads the settings only when it has a parent whose chain depth they limit.
create function baton_private.tg_task_handoffs__prepare_insert() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  parent public.task_handoffs;
  max_depth integer;
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
    max_depth := (baton_private.settings()).max_chain_depth;
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

-- The check of a task's required capabilities, without a query.
--
-- Checking each capability with a subquery over unnest(...) is a query for every task handed off, half
-- the trigger's cost (29 of its µs a task, track_functions, 10,000 hand-offs on a stack with a million
-- finished tasks); the loop below, which PL/pgSQL evaluates as plain expressions, costs 14-16. The rule:
-- at most 32, none null, each a slug (baton_private.is_slug, which PostgreSQL inlines). The trigger
-- validates a column only when it is new or changed.
create function baton_private.tg_task_handoffs__validate() returns trigger
language plpgsql set search_path = ''
as $$
declare
  fresh boolean := tg_op = 'INSERT';
  capability text;
  invalid boolean;
begin
  if fresh or new.title is distinct from old.title then
    if new.title is null or btrim(new.title) = '' then
      raise exception 'a task needs a title' using errcode = 'BT005', hint = 'Give a short, non-empty title.';
    end if;
    if length(new.title) > 200 then
      raise exception 'the title is % characters long; the limit is 200', length(new.title)
        using errcode = 'BT005', hint = 'Shorten the title and put the detail in the description.';
    end if;
  end if;
  if (fresh or new.description is distinct from old.description) and length(new.description) > 20000 then
    raise exception 'the description is % characters long; the limit is 20000', length(new.description)
      using errcode = 'BT005', hint = 'Put long material in the payload or link it.';
  end if;
  if fresh or new.payload is distinct from old.payload then
    if jsonb_typeof(new.payload) <> 'object' then
      raise exception 'the payload must be a JSON object, not %', jsonb_typeof(new.payload)
        using errcode = 'BT005', hint = 'Wrap the value, e.g. {"input": ...}.';
    end if;
    if octet_length(new.payload::text) > 262144 then
      raise exception 'the payload is % bytes; the limit is 256 KiB', octet_length(new.payload::text)
        using errcode = 'BT005', hint = 'Store large inputs elsewhere and pass a link in the payload.';
    end if;
  end if;
  if (fresh or new.expected_outputs is distinct from old.expected_outputs) and new.expected_outputs <> '[]' then
    perform baton_private.check_expected_outputs(new.expected_outputs);
  end if;
  if new.result is not null and (fresh or new.result is distinct from old.result) then
    perform baton_private.check_result(new.result);
  end if;
  if fresh or new.required_capabilities is distinct from old.required_capabilities then
    invalid := cardinality(new.required_capabilities) > 32;
    foreach capability in array coalesce(new.required_capabilities, '{}') loop
      exit when invalid;
      invalid := capability is null or not baton_private.is_slug(capability);
    end loop;
    if invalid then
      raise exception 'invalid required capabilities'
        using errcode = 'BT005',
              hint = 'Give at most 32 capabilities, each 1 to 63 lower-case letters, digits, ., :, - or _.';
    end if;
  end if;
  if fresh and (length(new.idempotency_key) > 200 or new.idempotency_key = '') then
    raise exception 'an idempotency key must be 1 to 200 characters'
      using errcode = 'BT005', hint = 'Use a short unique string, e.g. a hash of the request.';
  end if;
  if fresh or new.max_attempts is distinct from old.max_attempts then
    if new.max_attempts is null or new.max_attempts not between 1 and 100 then
      raise exception 'max_attempts must be between 1 and 100, got %', new.max_attempts
        using errcode = 'BT005', hint = 'Use a small number such as 3.';
    end if;
  end if;
  if (fresh or new.lease_seconds is distinct from old.lease_seconds) and new.lease_seconds is not null then
    perform baton_private.check_lease(new.lease_seconds);
  end if;
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

-- A task's result, checked in the transition trigger.
--
-- A completion sets the status and the result in one UPDATE. The transition trigger runs for every
-- update anyway, so it checks the result when the result changes (check_json_shape for how deeply and
-- widely it nests, check_result for its fields and size: the rules, called from here); the
-- limit_json_on_change and validate_on_change triggers do not fire for the result alone, since two more
-- PL/pgSQL calls per completed task, each reading the whole new and old rows, were 9 % of a worker
-- backend's CPU on a claim-and-report loop (report_and_claim, 10 per call, perf). Interleaved pairs of
-- runs of 2,000 tasks: 0.03 ms less Postgres CPU per task, median of ten pairs.
create function baton_private.tg_task_handoffs__transition() returns trigger
language plpgsql
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
    if not baton_private.transition_allowed(old.status, new.status) then
      select pg_catalog.string_agg(tr.to_status::text, ', ' order by tr.to_status) into allowed
      from public.task_status_transitions tr where tr.from_status = old.status;
      raise exception 'task % is %; it cannot become %', old.id, old.status, new.status
        using errcode = 'BT001',
              hint = case when allowed is null then pg_catalog.format('%s is final: nothing can change it.', old.status)
                          else pg_catalog.format('From %s a task may become: %s.', old.status, allowed) end;
    end if;

    case new.status
      when 'claimed' then
        new.claimed_at := pg_catalog.now();
        new.started_at := null;
      when 'in_progress' then
        if old.status = 'pending' then
          new.claimed_at := pg_catalog.now();
        end if;
        new.started_at := coalesce(new.started_at, pg_catalog.now());
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
        new.completed_at := pg_catalog.now();
        new.lease_expires_at := null;
        new.claim_token := null;
      else
        null;
    end case;
  end if;

  -- The result, checked as limit_json_on_change and then validate_on_change checked it: its nesting,
  -- its fields and its size.
  if new.result is not null and new.result is distinct from old.result then
    perform baton_private.check_json_shape(new.result, 'the result');
    perform baton_private.check_result(new.result);
  end if;

  new.updated_at := pg_catalog.now();
  return new;
end
$$;

create function baton_private.tg_task_events__append_only() returns trigger
language plpgsql set search_path = ''
as $$
begin
  raise exception 'task history is append-only' using errcode = 'BT003',
    hint = 'Record a correction as a new status change instead.';
end
$$;

-- Every history note stays within 2,000 characters, whoever writes it (reassign_task writes its own;
-- the fuzz test found a 5,000-character one).
create function baton_private.tg_task_events__bound_note() returns trigger
language plpgsql set search_path = ''
as $$
begin
  new.note := left(new.note, 2000);
  return new;
end
$$;

-- The task, if the caller may see it.
create function baton_private.visible_task(p_task_id uuid, agent text) returns public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  t public.task_handoffs;
begin
  select * into t from public.task_handoffs where id = p_task_id;
  if not found or not baton_private.can_see_task(t, agent) then
    perform baton_private.task_not_found(p_task_id, agent);
  end if;
  return t;
end
$$;

create function baton_private.can_see_task(t public.task_handoffs, agent text) returns boolean
language sql stable set search_path = ''
as $$
  select coalesce(
    t.from_agent = agent or t.to_agent = agent or t.claimed_by = agent
    or (t.to_agent is null and t.required_capabilities <@ baton_private.agent_capabilities(agent)),
    false)
$$;

-- The same, locked for a change.
create function baton_private.lock_task(p_task_id uuid, agent text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  t public.task_handoffs;
begin
  select * into t from public.task_handoffs where id = p_task_id for update;
  if not found or not baton_private.can_see_task(t, agent) then
    perform baton_private.task_not_found(p_task_id, agent);
  end if;
  return t;
end
$$;

-- The only way agents change tasks: each function checks who is calling and what they may do, then
-- makes one status change that the transition trigger checks again and records.

-- "Not found" for a task the caller may not see: its existence is not leaked.
create function baton_private.task_not_found(p_task_id uuid, agent text) returns void
language plpgsql set search_path = ''
as $$
begin
  raise exception 'no task % that agent "%" can see', p_task_id, agent
    using errcode = 'BT002', hint = 'Check the id: baton tasks --all lists the tasks you can see.';
end
$$;

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

grant execute on function baton_private.check_expected_outputs(jsonb) to anon, authenticated, service_role;

-- The protocol's result: {status: success|partial|failed, summary, artifacts: [{name, path|url, ...}], metrics},
-- at most 256 KiB. Checked wherever a result is stored (the transition and validation triggers).
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
  if octet_length(result::text) > 262144 then
    raise exception 'the result is % bytes; the limit is 256 KiB', octet_length(result::text)
      using errcode = 'BT005', hint = 'Store large outputs elsewhere and put a link in the result.';
  end if;
end
$$;

grant execute on function baton_private.check_result(jsonb) to anon, authenticated, service_role;

create function public.handoff_task(
  p_title text,
  p_to_agent text default null,
  p_description text default null,
  p_priority public.task_priority default 'medium',
  p_payload jsonb default '{}',
  p_required_capabilities text[] default '{}',
  p_deadline timestamptz default null,
  p_max_attempts integer default 3,
  p_parent_task_id uuid default null,
  p_idempotency_key text default null,
  p_allow_offline boolean default true,
  p_lease_seconds integer default null,
  p_expected_outputs jsonb default '[]',
  p_input_artifacts jsonb default '[]',
  p_depends_on uuid[] default '{}',
  p_dependency_mode text default 'all',
  p_on_dependency_failure text default 'cancel',
  p_run_at timestamptz default null
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs;
  parent public.task_handoffs;
  target public.agents;
begin
  if p_to_agent is not null then
    select * into target from public.agents a where a.id = p_to_agent;
    if not found then
      raise exception 'no agent named "%"', p_to_agent
        using errcode = 'BT002', hint = 'See who is registered: baton discover --all.';
    end if;
    if not coalesce(p_allow_offline, true) and not baton_private.is_online(target) then
      raise exception 'agent "%" is offline (last heartbeat: %)', p_to_agent, coalesce(target.last_heartbeat::text, 'never')
        using errcode = 'BT011',
              hint = 'Queue it anyway with allow-offline (baton handoff --allow-offline), or pick an online agent: baton discover.';
    end if;
  end if;
  if p_parent_task_id is not null then
    parent := baton_private.visible_task(p_parent_task_id, me);
    if parent.claimed_by is distinct from me and parent.from_agent <> me then
      raise exception 'only the holder or the sender of task % can hand off work within it', p_parent_task_id
        using errcode = 'BT003', hint = 'Hand it off without a parent, or claim the parent first.';
    end if;
  end if;
  if coalesce(p_dependency_mode, 'all') not in ('all', 'any') or coalesce(p_on_dependency_failure, 'cancel') not in ('cancel', 'run') then
    raise exception 'dependency mode must be all or any, and on failure cancel or run (got % and %)', p_dependency_mode, p_on_dependency_failure
      using errcode = 'BT005', hint = 'all waits for every dependency, any for the first; cancel or run decides what a failed one does.';
  end if;
  perform baton_private.check_inputs(coalesce(p_input_artifacts, '[]'), me);
  if p_idempotency_key is not null then
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
    if found then
      return t;
    end if;
  end if;

  insert into public.task_handoffs (
    from_agent, to_agent, title, description, priority, payload, required_capabilities,
    deadline, max_attempts, parent_task_id, idempotency_key, lease_seconds, expected_outputs, input_artifacts,
    depends_on, dependency_mode, on_dependency_failure, run_at
  ) values (
    me, p_to_agent, p_title, p_description, coalesce(p_priority, 'medium'), coalesce(p_payload, '{}'),
    coalesce(p_required_capabilities, '{}'), p_deadline, coalesce(p_max_attempts, 3), p_parent_task_id,
    p_idempotency_key, p_lease_seconds, coalesce(p_expected_outputs, '[]'), coalesce(p_input_artifacts, '[]'),
    coalesce(p_depends_on, '{}'), coalesce(p_dependency_mode, 'all'), coalesce(p_on_dependency_failure, 'cancel'), p_run_at
  )
  on conflict (from_agent, idempotency_key) where idempotency_key is not null do nothing
  returning * into t;

  if t.id is null then
    -- A concurrent hand-off with the same key won; return its task.
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
  end if;
  return t;
end
$$;

revoke all on function public.handoff_task from public, anon;
grant execute on function public.handoff_task to authenticated;

comment on function public.handoff_task is 'Hands off a task as the calling agent: to p_to_agent, or to every agent holding p_required_capabilities when p_to_agent is null. With p_depends_on it waits until those tasks complete (p_dependency_mode all or any; p_on_dependency_failure cancel or run); with p_run_at it is not claimable before then. With p_allow_offline = false an offline addressee is refused (BT011).';

-- The batch reads the sender's usage without a lock and counts what it made in its own slot.
create function public.handoff_tasks(p_tasks jsonb)
returns table (index integer, task_id uuid, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  settings public.baton_settings := baton_private.settings();
  used record;
  item jsonb;
  i integer;
  made public.task_handoffs;
  count_made integer := 0;
  allowance integer;
  err_hint text;
  quick jsonb := '{}';
  -- The answers for the rest, one object each (appending to an array variable costs no copy).
  answers jsonb[] := '{}';
begin
  if jsonb_typeof(p_tasks) <> 'array' or jsonb_array_length(p_tasks) > 1000 then
    raise exception 'tasks must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"title": "…", "to_agent": "coder", "payload": {}}, …].';
  end if;
  -- What the sender used, read without a lock: its concurrent requests do not wait for each other.
  select * into used from baton_private.add_usage(me, 0, 0, 0);
  if used.open_tasks + jsonb_array_length(p_tasks) > settings.open_tasks_per_sender then
    used.open_tasks := baton_private.recount_open_tasks(me, 0);
  end if;
  allowance := least(settings.handoffs_per_minute - used.handoffs, settings.open_tasks_per_sender - used.open_tasks);
  perform set_config('baton.batch', 'on', true);
  -- Plain tasks, when the quota has room for all: one INSERT for them all.
  if jsonb_array_length(p_tasks) <= allowance then
    begin
      with asked as materialized (
        select gen_random_uuid() as id, (a.n - 1)::integer as n, a.item
        from jsonb_array_elements(p_tasks) with ordinality as a (item, n)
        where jsonb_typeof(a.item) = 'object'
          and coalesce(a.item ->> 'parent_task_id', a.item ->> 'idempotency_key', a.item ->> 'run_at') is null
          and coalesce(a.item -> 'input_artifacts', '[]') = '[]'
          and coalesce(a.item -> 'depends_on', '[]') = '[]'
          and coalesce(a.item ->> 'allow_offline', 'true') = 'true'
          and (a.item ->> 'to_agent' is null or exists (select from public.agents g where g.id = a.item ->> 'to_agent'))
      ), inserted as (
        insert into public.task_handoffs (
          id, from_agent, to_agent, title, description, priority, payload, required_capabilities,
          deadline, max_attempts, lease_seconds, expected_outputs)
        select q.id, me, q.item ->> 'to_agent', q.item ->> 'title', q.item ->> 'description',
               coalesce(q.item ->> 'priority', 'medium')::public.task_priority, coalesce(q.item -> 'payload', '{}'),
               coalesce(array(select jsonb_array_elements_text(q.item -> 'required_capabilities')), '{}'),
               (q.item ->> 'deadline')::timestamptz, coalesce((q.item ->> 'max_attempts')::integer, 3),
               (q.item ->> 'lease_seconds')::integer, coalesce(q.item -> 'expected_outputs', '[]')
        from asked q
        order by q.n
        returning id
      )
      -- One INSERT stores every row or raises: each asked row is stored under the id it was given.
      -- (Not a join with what it returns: over two CTEs the planner picks a nested loop, 1,000 × 1,000.)
      select coalesce(jsonb_object_agg(q.n::text, q.id), '{}') into quick
      from asked q
      where (select count(*) from inserted) = (select count(*) from asked);
    exception when others then
      quick := '{}';
    end;
  end if;
  -- The rest one by one, each refused on its own. (When the plain ones went in together, the quota
  -- had room for every item, so their order against the rest does not matter.)
  count_made := (select count(*) from jsonb_object_keys(quick));
  for item, i in
    select a.item, (a.n - 1)::integer from jsonb_array_elements(p_tasks) with ordinality as a (item, n)
    where not quick ? (a.n - 1)::text
    order by a.n
  loop
    if count_made >= allowance then
      answers := answers || jsonb_build_object('index', i, 'code', 'BT013',
        'message', format('agent "%s" reached its quota of hand-offs per minute or of open tasks', me),
        'hint', format('Try again in %s s; an operator can raise baton_settings.handoffs_per_minute or open_tasks_per_sender.',
                       greatest(ceil(extract(epoch from date_trunc('minute', now()) + interval '1 minute' - now())), 1)));
    else
      begin
        made := baton_private.handoff_item(item);
        if made.created_at = now() then
          count_made := count_made + 1;
        end if;
        answers := answers || jsonb_build_object('index', i, 'task_id', made.id);
      exception when others then
        get stacked diagnostics err_hint = pg_exception_hint;
        answers := answers || jsonb_build_object('index', i, 'code', sqlstate, 'message', sqlerrm, 'hint', nullif(err_hint, ''));
      end;
    end if;
  end loop;
  perform set_config('baton.batch', '', true);
  perform baton_private.add_usage(me, count_made, 0, 0);
  return query
    select q.key::integer, (q.value #>> '{}')::uuid, null::text, null::text, null::text from jsonb_each(quick) q
    union all
    select a.index, a.task_id, a.code, a.message, a.hint
    from unnest(answers) as x, jsonb_to_record(x) as a (index integer, task_id uuid, code text, message text, hint text)
    order by 1;
end
$$;

revoke all on function public.handoff_tasks from public, anon;
grant execute on function public.handoff_tasks to authenticated;

comment on function public.handoff_tasks is 'Hands off many tasks in one call, each as handoff_task would (its arguments without the p_ prefix); a refused one comes back with its index, code, message and hint, and the others are made.';

-- One hand-off given as JSON (as the batch and the fan-out take them), made by handoff_task, the rule.
create function baton_private.handoff_item(item jsonb) returns public.task_handoffs
language sql set search_path = ''
as $$
  select public.handoff_task(
    p_title => item ->> 'title',
    p_to_agent => item ->> 'to_agent',
    p_description => item ->> 'description',
    p_priority => coalesce(item ->> 'priority', 'medium')::public.task_priority,
    p_payload => coalesce(item -> 'payload', '{}'),
    p_required_capabilities => coalesce(array(select jsonb_array_elements_text(item -> 'required_capabilities')), '{}'),
    p_deadline => (item ->> 'deadline')::timestamptz,
    p_max_attempts => coalesce((item ->> 'max_attempts')::integer, 3),
    p_parent_task_id => (item ->> 'parent_task_id')::uuid,
    p_idempotency_key => item ->> 'idempotency_key',
    p_allow_offline => coalesce((item ->> 'allow_offline')::boolean, true),
    p_lease_seconds => (item ->> 'lease_seconds')::integer,
    p_expected_outputs => coalesce(item -> 'expected_outputs', '[]'),
    p_input_artifacts => coalesce(item -> 'input_artifacts', '[]'),
    p_depends_on => coalesce(array(select jsonb_array_elements_text(item -> 'depends_on'))::uuid[], '{}'),
    p_dependency_mode => coalesce(item ->> 'dependency_mode', 'all'),
    p_on_dependency_failure => coalesce(item ->> 'on_dependency_failure', 'cancel'),
    p_run_at => (item ->> 'run_at')::timestamptz)
$$;

revoke all on function baton_private.handoff_item(jsonb) from public, anon, authenticated;

create function public.cancel_task(p_task_id uuid, p_reason text default null) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can cancel task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Ask the sender, or release the task if you hold it.';
  end if;
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    raise exception 'task % is already %; it cannot be cancelled', t.id, t.status
      using errcode = 'BT001', hint = 'A final task cannot change.';
  end if;
  perform baton_private.set_note(coalesce(p_reason, 'cancelled by the sender'));
  update public.task_handoffs set status = 'cancelled', status_reason = p_reason
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;

revoke all on function public.cancel_task from public, anon;
grant execute on function public.cancel_task to authenticated;

comment on function public.cancel_task is 'The sender withdraws a task that is not final.';

create function public.reassign_task(p_task_id uuid, p_to_agent text, p_reason text default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  note text;
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can reassign task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Release it if you hold it (baton release <task>).';
  end if;
  if not exists (select from public.agents a where a.id = p_to_agent) then
    raise exception 'no agent named "%"', p_to_agent using errcode = 'BT002', hint = 'See who is registered: baton discover --all.';
  end if;
  if t.status not in ('pending', 'claimed', 'in_progress') then
    raise exception 'task % is %; only a pending, claimed or running task can be reassigned', t.id, t.status
      using errcode = 'BT001',
            hint = case when t.status = 'input_required' then 'Answer or cancel it first.' else 'A final task cannot change; hand off a new one.' end;
  end if;
  note := format('reassigned from %s to %s%s', coalesce(t.to_agent, 'everyone'), p_to_agent,
                 case when p_reason is null then '' else ': ' || p_reason end);
  if t.status = 'pending' then
    update public.task_handoffs set to_agent = p_to_agent where id = t.id returning * into t;
    insert into public.task_events (task_id, actor, from_status, to_status, note)
    values (t.id, me, 'pending', 'pending', note);
  else
    -- Taken from its holder without counting the attempt against the task.
    perform baton_private.set_note(note);
    update public.task_handoffs set status = 'pending', to_agent = p_to_agent, attempts = greatest(attempts - 1, 0)
    where id = t.id returning * into t;
    perform baton_private.set_note(null);
  end if;
  return t;
end
$$;

revoke all on function public.reassign_task from public, anon;
grant execute on function public.reassign_task to authenticated;

comment on function public.reassign_task is 'The sender gives a task that is not final to another agent; a held task goes back to pending for it. Noted in task_events.';

create function public.my_tasks(
  p_statuses public.task_status[] default '{pending,claimed,in_progress,input_required}',
  p_limit integer default 50
)
returns setof public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'a listing holds between 1 and 1000 tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Ask for fewer, and page by status or age if you need more.';
  end if;
  if p_statuses is not null and p_statuses <@ '{pending,claimed,in_progress,input_required}'::public.task_status[] then
    return query select * from baton_private.open_tasks_of(me, p_statuses, p_limit);
  else
    -- Finished tasks too: a listing of the agent's history, as a REST query of task_handoffs gives it.
    return query
      select t.* from public.task_handoffs t
      where (t.to_agent = me or t.claimed_by = me) and (p_statuses is null or t.status = any (p_statuses))
      order by t.priority desc, t.created_at
      limit p_limit;
  end if;
end
$$;

revoke all on function public.my_tasks(public.task_status[], integer) from public, anon;
grant execute on function public.my_tasks(public.task_status[], integer) to authenticated;

comment on function public.my_tasks is 'The caller''s inbox: tasks addressed to it or held by it, highest priority first, then oldest; the open ones unless p_statuses names others (null: every status). Open tasks are read from the front of their indexes, however long the history.';

-- The open tasks addressed to `me` or held by it, with one of `statuses`, highest priority first, then
-- oldest: the front of each index, merged.
create function baton_private.open_tasks_of(me text, statuses public.task_status[], wanted integer)
returns setof public.task_handoffs
language plpgsql stable set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
begin
  return query
    select u.* from (
      (select t.* from public.task_handoffs t
       where t.to_agent = me and t.status in ('pending', 'claimed', 'in_progress', 'input_required')
         and t.status = any (statuses)
       order by t.priority desc, t.created_at
       limit wanted)
      union all
      (select t.* from public.task_handoffs t
       where t.claimed_by = me and t.to_agent is distinct from me
         and t.status in ('pending', 'claimed', 'in_progress', 'input_required') and t.status = any (statuses)
       order by t.priority desc, t.created_at
       limit wanted)
    ) u
    order by u.priority desc, u.created_at
    limit wanted;
end
$$;

revoke all on function baton_private.open_tasks_of(text, public.task_status[], integer) from public, anon, authenticated;

create trigger step2_prepare_insert before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__prepare_insert();

create trigger step3_transition before update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__transition();

create trigger append_only before update on public.task_events
  for each row execute function baton_private.tg_task_events__append_only();

create trigger bound_note before insert on public.task_events
  for each row when (length(new.note) > 2000) execute function baton_private.tg_task_events__bound_note();

create trigger step4_validate before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__validate();

create trigger compile after insert or update or delete or truncate on public.task_status_transitions
  for each statement execute function baton_private.tg_task_status_transitions__compile();

create trigger step4_validate_on_change before update on public.task_handoffs
  for each row when (new.title is distinct from old.title or new.description is distinct from old.description
                     or new.payload is distinct from old.payload or new.expected_outputs is distinct from old.expected_outputs
                     or new.required_capabilities is distinct from old.required_capabilities
                     or new.max_attempts is distinct from old.max_attempts or new.lease_seconds is distinct from old.lease_seconds
                     or new.progress_percent is distinct from old.progress_percent
                     or new.progress_message is distinct from old.progress_message
                     or new.status_reason is distinct from old.status_reason)
  execute function baton_private.tg_task_handoffs__validate();

create policy "Agents can read the allowed transitions" on public.task_status_transitions
  for select to authenticated using (true);

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
