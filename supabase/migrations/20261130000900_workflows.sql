-- Workflows: work that waits on work. Dependencies (all or any, cancel or run on failure) and the
-- fan-out and join built on them, tasks that run later (run_at) or on a schedule (recurring_handoffs,
-- cron expressions), dead letters that can be retried, and retention. The database enforces all of it:
-- a task that waits is not claimable, a failed dependency cancels what waits on it, a recurring
-- hand-off makes at most one task per slot however many daemons sweep, and retention never removes an
-- open task or anything an open task still needs.

create table public.recurring_handoffs (
  id uuid not null default gen_random_uuid(),
  name text not null,
  schedule text not null,
  from_agent text not null,
  to_agent text,
  required_capabilities text[] not null default '{}'::text[],
  template jsonb not null,
  enabled boolean not null default true,
  next_run_at timestamp with time zone not null,
  last_run_at timestamp with time zone,
  last_task_id uuid,
  last_error text,
  created_at timestamp with time zone not null default now(),
  constraint recurring_handoffs_from_agent_fkey FOREIGN KEY (from_agent) REFERENCES public.agents(id) ON DELETE CASCADE,
  constraint recurring_handoffs_last_task_id_fkey FOREIGN KEY (last_task_id) REFERENCES public.task_handoffs(id) ON DELETE SET NULL,
  constraint recurring_handoffs_name_check CHECK (baton_private.is_slug(name)),
  constraint recurring_handoffs_name_key UNIQUE (name),
  constraint recurring_handoffs_pkey PRIMARY KEY (id),
  constraint recurring_handoffs_template_check CHECK (((jsonb_typeof(template) = 'object'::text) AND (jsonb_typeof((template -> 'title'::text)) = 'string'::text))),
  constraint recurring_handoffs_to_agent_fkey FOREIGN KEY (to_agent) REFERENCES public.agents(id) ON DELETE CASCADE
);
alter table public.recurring_handoffs enable row level security;

revoke all on table public.recurring_handoffs from anon, authenticated;
grant select on table public.recurring_handoffs to authenticated;
grant all on table public.recurring_handoffs to service_role;

comment on table public.recurring_handoffs is 'Hand-offs made on a schedule: the sweep hands off the template as from_agent when next_run_at is due, at most once per slot however many daemons sweep. Operators manage them (baton schedule add|list|remove); agents see the ones sent as them.';
comment on column public.recurring_handoffs.id is 'The schedule''s id.';
comment on column public.recurring_handoffs.name is 'A short unique name (letters, digits, dashes), e.g. nightly-report.';
comment on column public.recurring_handoffs.schedule is 'When it fires: five-field cron syntax in UTC (minute hour day month weekday), e.g. 0 6 * * *.';
comment on column public.recurring_handoffs.from_agent is 'The agent each task is sent as (its sender, who hears of its result).';
comment on column public.recurring_handoffs.to_agent is 'The agent each task is addressed to, or null to offer it to whoever holds required_capabilities.';
comment on column public.recurring_handoffs.required_capabilities is 'For an offer (to_agent null): what the taker must be able to do.';
comment on column public.recurring_handoffs.template is 'The task: {title, description?, payload?, priority?, expected_outputs?, max_attempts?, lease_seconds?}.';
comment on column public.recurring_handoffs.enabled is 'Whether the sweep makes tasks from it.';
comment on column public.recurring_handoffs.next_run_at is 'The next slot it fires at; set from the schedule when created and after each run (missed slots are skipped, not caught up).';
comment on column public.recurring_handoffs.last_run_at is 'When the sweep last made a task from it (or tried to).';
comment on column public.recurring_handoffs.last_task_id is 'The task it made last.';
comment on column public.recurring_handoffs.last_error is 'Why the last attempt made no task (quota, a removed agent, an invalid template), or null.';
comment on column public.recurring_handoffs.created_at is 'When it was defined.';

alter table public.task_handoffs add constraint task_handoffs_recurring_id_fkey FOREIGN KEY (recurring_id) REFERENCES public.recurring_handoffs(id) ON DELETE SET NULL;

create index task_handoffs_depends_on_idx on public.task_handoffs using gin (depends_on) where depends_on <> '{}';

create index task_handoffs_retry_of_idx on public.task_handoffs (retry_of) where retry_of is not null;

create index recurring_handoffs_due_idx on public.recurring_handoffs (next_run_at) where enabled;

-- Only roots: retention looks for chains by their root, and no other finished task pays for the entry.
create index task_handoffs_finished_roots_idx on public.task_handoffs (completed_at) where completed_at is not null and id = root_task_id;

create unique index task_handoffs_one_per_slot on public.task_handoffs (recurring_id, recurrence_slot)
  where recurring_id is not null;

-- Finding what waits on a task that ended, once per statement and only through the dependency index.
--
-- The tasks that wait on any of `ids`, found through the GIN index on depends_on. The trigger that
-- follows every change (history_and_push) gathers the tasks a statement ended and asks this which of
-- them anything waits for (usually none, and then nothing else runs). A row trigger that looked for
-- dependents with a query also filtering on status = 'pending' let the planner, with statistics from
-- an emptier table, read every open task per completion: with 3,000 tasks queued a report of 10
-- outcomes took 40 ms instead of 10.

-- Which of these tasks something depends on, and what: only the GIN index on depends_on can answer
-- (sequential scans are off for this one query), whatever the planner believes about open tasks.
-- (PL/pgSQL, not SQL, so that its plan is made once per session, not on every call.)
create function baton_private.dependents_of(ids uuid[]) returns table (task_id uuid, depends_on_id uuid)
language plpgsql stable security definer set search_path = '' set enable_seqscan = off
as $$
begin
  return query
    select t.id, e.id
    from unnest(ids) as e (id)
    join public.task_handoffs t on t.depends_on @> array[e.id] and t.depends_on <> '{}';
end
$$;

revoke all on function baton_private.dependents_of(uuid[]) from public, anon, authenticated;

-- What waits on one task that ended moves: released, counted down, or cancelled with the reason.
-- A cancelled dependent ends too, so the cascade follows the whole graph. Dependents are locked one by
-- one in id order.
create function baton_private.release_dependents_of(ended public.task_handoffs) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  waiting uuid;
  d public.task_handoffs;
  why text;
begin
  for waiting in select x.task_id from baton_private.dependents_of(array[ended.id]) x order by x.task_id loop
    select * into d from public.task_handoffs t where t.id = waiting and t.status = 'pending' and t.waiting_on > 0 for update;
    continue when d.id is null;
    if ended.status = 'completed' then
      if d.dependency_mode = 'any' then
        perform baton_private.release_waiting(d);
        -- First success wins: the others are no longer needed.
        perform baton_private.set_note(format('task %s finished first; %s needed only one', ended.id, d.id));
        update public.task_handoffs o
        set status = 'cancelled', status_reason = format('not needed: %s (%s) finished first for %s', ended.id, ended.title, d.id)
        where o.id = any (d.depends_on) and o.id <> ended.id and o.status in ('pending', 'claimed', 'in_progress', 'input_required');
        perform baton_private.set_note(null);
      elsif d.waiting_on = 1 then
        perform baton_private.release_waiting(d);
      else
        update public.task_handoffs set waiting_on = waiting_on - 1 where id = d.id;
      end if;
    elsif d.on_dependency_failure = 'run' or (d.dependency_mode = 'any' and d.waiting_on > 1) then
      if d.waiting_on = 1 then
        perform baton_private.release_waiting(d);
      else
        update public.task_handoffs set waiting_on = waiting_on - 1 where id = d.id;
      end if;
    else
      why := format('%s: task %s (%s) it depends on was %s', case when d.dependency_mode = 'any' then 'none of the tasks it depends on completed' else 'dependency ended' end,
                    ended.id, ended.title, ended.status) || coalesce(': ' || ended.status_reason, '');
      perform baton_private.set_note(why);
      update public.task_handoffs set status = 'cancelled', status_reason = left(why, 2000), waiting_on = 0, not_before = null
      where id = d.id;
      perform baton_private.set_note(null);
    end if;
  end loop;
end
$$;

revoke all on function baton_private.release_dependents_of(public.task_handoffs) from public, anon, authenticated;

-- A task released from waiting is announced by follow_change, as its UPDATE's statement ends.
create function baton_private.release_waiting(d public.task_handoffs) returns void
language plpgsql security definer set search_path = ''
as $$
begin
  update public.task_handoffs set waiting_on = 0, not_before = case when run_at > now() then run_at end
  where id = d.id;
end
$$;

revoke all on function baton_private.release_waiting(public.task_handoffs) from public, anon, authenticated;

-- Sets waiting_on and not_before for a new task from its dependencies and run_at. Runs after
-- prepare_insert (which clears not_before), by trigger name order.
create function baton_private.tg_task_handoffs__wait_on_dependencies() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  unknown uuid;
  done integer;
  broken public.task_handoffs;
  open_ones integer;
begin
  if cardinality(new.depends_on) = 0 then
    new.not_before := new.run_at;
    return new;
  end if;
  -- Each once, in the order given (the order ctx.dependencies and task_dependencies keep).
  new.depends_on := array(select u.d from unnest(new.depends_on) with ordinality u (d, n) where u.d is not null group by u.d order by min(u.n));
  if cardinality(new.depends_on) > 100 then
    raise exception 'a task may depend on at most 100 tasks, not %', cardinality(new.depends_on)
      using errcode = 'BT005', hint = 'Depend on a join task that gathers them instead.';
  end if;
  if new.id = any (new.depends_on) then
    raise exception 'task % cannot depend on itself', new.id
      using errcode = 'BT015', hint = 'Dependencies must be other, existing tasks; they cannot form a cycle.';
  end if;
  -- Only tasks the sender may see: naming another agent's task must not reveal that it exists.
  select d into unknown from unnest(new.depends_on) d
  where not exists (select from public.task_handoffs t where t.id = d and baton_private.can_see_task(t, new.from_agent))
  limit 1;
  if unknown is not null then
    raise exception 'no task % that agent "%" can see, to depend on', unknown, new.from_agent
      using errcode = 'BT002', hint = 'Depend on tasks you sent, hold or can claim: baton tasks --all lists them.';
  end if;

  -- Lock them against a change of status until this task is stored: a dependency that ends meanwhile
  -- either ends first (and is counted as ended here) or waits, and then finds this task to release.
  perform from public.task_handoffs t where t.id = any (new.depends_on) order by t.id for share;
  select count(*) filter (where t.status = 'completed'),
         count(*) filter (where t.status in ('pending', 'claimed', 'in_progress', 'input_required'))
  into done, open_ones
  from public.task_handoffs t where t.id = any (new.depends_on);
  select * into broken from public.task_handoffs t
  where t.id = any (new.depends_on) and t.status in ('failed', 'cancelled', 'rejected') limit 1;

  if new.dependency_mode = 'all' then
    if broken.id is not null and new.on_dependency_failure = 'cancel' then
      raise exception 'task % it would depend on is already %', broken.id, broken.status
        using errcode = 'BT015', hint = 'Depend on tasks that can still complete (baton retry makes a new attempt), or let it run anyway (on_dependency_failure run).';
    end if;
    new.waiting_on := open_ones;
  elsif done > 0 then
    new.waiting_on := 0;
  elsif open_ones = 0 and new.on_dependency_failure = 'cancel' then
    raise exception 'every task it would depend on already ended without completing'
      using errcode = 'BT015', hint = 'Depend on a task that can still complete.';
  else
    new.waiting_on := open_ones;
  end if;
  new.not_before := case when new.waiting_on > 0 then 'infinity'::timestamptz else new.run_at end;
  return new;
end
$$;

revoke all on function baton_private.tg_task_handoffs__wait_on_dependencies() from public, anon, authenticated;

create function baton_private.tg_task_handoffs__keep_dependencies() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if new.depends_on <> old.depends_on or new.dependency_mode <> old.dependency_mode
     or new.on_dependency_failure <> old.on_dependency_failure or new.retry_of is distinct from old.retry_of and new.retry_of is not null then
    raise exception 'the dependencies of task % cannot change', old.id
      using errcode = 'BT005', hint = 'Hand off a new task with the dependencies it needs.';
  end if;
  return new;
end
$$;

revoke all on function baton_private.tg_task_handoffs__keep_dependencies() from public, anon, authenticated;

-- The tasks a task depends on, with their results, for whoever may see the task and works on it (its
-- holder or addressee, or a capable claimer), or for its sender.
create function public.task_dependencies(p_task_id uuid) returns setof public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  d public.task_handoffs;
begin
  for d in select * from public.task_handoffs x where x.id = any (t.depends_on) order by array_position(t.depends_on, x.id) loop
    if d.claimed_by is distinct from me then
      d.claim_token := null;
    end if;
    return next d;
  end loop;
end
$$;

revoke all on function public.task_dependencies from public, anon;
grant execute on function public.task_dependencies to authenticated;

comment on function public.task_dependencies is 'The tasks a task depends on (in the order it names them), with their status, result and reason, for anyone who may see the task: its executor reads the results it works from here.';

-- Fan-out and fan-in -------------------------------------------------------------------------------
-- From within a task it holds (or sent), an agent hands off several sub-tasks and the join that
-- depends on them, in one call: first (the first success releases the join; the others are cancelled),
-- all (the join waits for every one), or judge (all, and the join goes to any agent holding the
-- judging capability instead of back to the caller).
create function public.fan_out(p_parent_task_id uuid, p_tasks jsonb, p_join jsonb default '{}')
returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  mode text := coalesce(p_join ->> 'mode', 'all');
  item jsonb;
  made public.task_handoffs;
  ids uuid[] := '{}';
  joined public.task_handoffs;
begin
  if jsonb_typeof(p_tasks) <> 'array' or jsonb_array_length(p_tasks) not between 1 and 100 then
    raise exception 'a fan-out needs 1 to 100 tasks' using errcode = 'BT005',
      hint = 'Send [{"title": "…", "to_agent": "…"} or {"title": "…", "required_capabilities": ["…"]}, …].';
  end if;
  if mode not in ('first', 'all', 'judge') then
    raise exception 'the join must be first, all or judge, not %', mode using errcode = 'BT005',
      hint = 'first: the first success wins; all: every result, concatenated; judge: an agent with the judging capability picks.';
  end if;
  for item in select value from jsonb_array_elements(p_tasks) loop
    made := baton_private.handoff_item(item || jsonb_build_object('parent_task_id', p_parent_task_id));
    ids := ids || made.id;
  end loop;
  joined := public.handoff_task(
    p_title => coalesce(p_join ->> 'title', format('Join (%s) of %s tasks', mode, cardinality(ids))),
    p_to_agent => case when mode = 'judge' then p_join ->> 'to_agent' else coalesce(p_join ->> 'to_agent', me) end,
    p_description => p_join ->> 'description',
    p_payload => coalesce(p_join -> 'payload', '{}') || jsonb_build_object(
      'task_type', case when mode = 'judge' then coalesce(p_join -> 'payload' ->> 'task_type', 'judge') else 'baton.join' end,
      'join', mode),
    p_required_capabilities => case when mode = 'judge' and p_join ->> 'to_agent' is null
                                    then array[coalesce(p_join ->> 'capability', 'judge')] else '{}' end,
    p_parent_task_id => p_parent_task_id,
    p_expected_outputs => coalesce(p_join -> 'expected_outputs', '[]'),
    p_depends_on => ids,
    p_dependency_mode => case when mode = 'first' then 'any' else 'all' end,
    p_on_dependency_failure => coalesce(p_join ->> 'on_failure', 'cancel'));
  return jsonb_build_object('tasks', to_jsonb(ids), 'join', joined.id);
end
$$;

revoke all on function public.fan_out from public, anon;
grant execute on function public.fan_out to authenticated;

comment on function public.fan_out is 'Hands off up to 100 sub-tasks of p_parent_task_id and the join task that depends on them, in one transaction. p_join: {mode: first|all|judge, title?, to_agent?, capability? (judge, default "judge"), payload?, expected_outputs?, on_failure?: cancel|run}. Returns {tasks: [ids], join: id}.';

-- A retry is a new task within the failed one's parent: its sender must still hold or have sent that
-- parent, as for any hand-off within a task.
create function public.retry_task(p_task_id uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  old public.task_handoffs;
  parent public.task_handoffs;
  already uuid;
  t public.task_handoffs;
begin
  if me is null and coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  select * into old from public.task_handoffs where id = p_task_id for update;
  if not found or (me is not null and not baton_private.can_see_task(old, me)) then
    raise exception 'no task % to retry', p_task_id using errcode = 'BT002', hint = 'baton tasks --failed lists the failed tasks you sent.';
  end if;
  if me is not null and old.from_agent <> me then
    raise exception 'only the sender of task % (or an operator) can retry it', p_task_id
      using errcode = 'BT003', hint = format('Ask "%s" to retry it.', old.from_agent);
  end if;
  if me is not null and old.parent_task_id is not null then
    select * into parent from public.task_handoffs p where p.id = old.parent_task_id;
    if parent.claimed_by is distinct from me and parent.from_agent <> me then
      raise exception 'only the holder or the sender of task % can hand off work within it, and a retry of task % would', old.parent_task_id, p_task_id
        using errcode = 'BT003', hint = 'Hand off the work again without a parent, or ask the parent''s holder to retry it.';
    end if;
  end if;
  if old.status <> 'failed' then
    raise exception 'task % is %; only failed tasks are retried', p_task_id, old.status
      using errcode = 'BT001', hint = 'A task still open retries by itself while attempts remain (baton fail --retry); hand off a new one otherwise.';
  end if;
  select r.id into already from public.task_handoffs r
  where r.retry_of = old.id and r.status in ('pending', 'claimed', 'in_progress', 'input_required') limit 1;
  if already is not null then
    raise exception 'task % is already being retried as %', p_task_id, already
      using errcode = 'BT010', hint = 'Wait for that attempt; retry it in turn if it fails.';
  end if;
  insert into public.task_handoffs (
    from_agent, to_agent, title, description, priority, payload, required_capabilities, deadline, max_attempts,
    parent_task_id, lease_seconds, expected_outputs, input_artifacts, retry_of)
  values (
    old.from_agent, old.to_agent, old.title, old.description, old.priority, old.payload, old.required_capabilities,
    case when old.deadline > now() then old.deadline end, old.max_attempts,
    old.parent_task_id, old.lease_seconds, old.expected_outputs, old.input_artifacts, old.id)
  returning * into t;
  return t;
end
$$;

revoke all on function public.retry_task from public, anon;
grant execute on function public.retry_task to authenticated, service_role;

comment on function public.retry_task is 'A new attempt at a failed task: a new task with the same work, sent as the original sender, linked by retry_of. Its sender or the operator (service role) may retry; one open retry at a time.';

-- Later and recurring --------------------------------------------------------------------------------

-- The values a cron field allows, from lo to hi: *, a, a-b, */n, a-b/n, and lists of them.
create function baton_private.cron_field(field text, lo integer, hi integer) returns integer[]
language plpgsql immutable set search_path = ''
as $$
declare
  part text;
  m text[];
  first integer;
  last integer;
  step integer;
  result integer[] := '{}';
begin
  foreach part in array string_to_array(field, ',') loop
    m := regexp_match(part, '^(\*|(\d+)(?:-(\d+))?)(?:/(\d+))?$');
    if m is null then
      raise exception 'cron field "%" is not understood', field
        using errcode = 'BT005', hint = 'Each field is *, a number, a range a-b, a step */n or a-b/n, or a list of them, e.g. 0,30 or 1-5.';
    end if;
    first := case when m[1] = '*' then lo else m[2]::integer end;
    last := case when m[1] = '*' then hi when m[3] is not null then m[3]::integer when m[4] is not null then hi else first end;
    step := coalesce(m[4]::integer, 1);
    if first < lo or last > hi or first > last or step < 1 then
      raise exception 'cron field "%" is outside % to %', field, lo, hi using errcode = 'BT005',
        hint = 'Minutes 0-59, hours 0-23, days 1-31, months 1-12, weekdays 0-7 (0 and 7 are Sunday).';
    end if;
    result := result || array(select generate_series(first, last, step));
  end loop;
  return array(select distinct v from unnest(result) v order by v);
end
$$;

revoke all on function baton_private.cron_field(text, integer, integer) from public, anon, authenticated;

-- The first time after `after` that a five-field cron schedule (UTC) fires.
create function baton_private.cron_next(schedule text, after timestamptz) returns timestamptz
language plpgsql immutable set search_path = ''
as $$
declare
  f text[] := regexp_split_to_array(trim(schedule), '\s+');
  minutes integer[];
  hours integer[];
  days integer[];
  months integer[];
  weekdays integer[];
  t timestamp := date_trunc('minute', after at time zone 'UTC') + interval '1 minute';
  d date;
  day_ok boolean;
  h integer;
  mi integer;
begin
  if cardinality(f) <> 5 then
    raise exception 'the schedule "%" needs five fields: minute hour day month weekday', schedule
      using errcode = 'BT005', hint = 'For example */15 * * * * (every 15 minutes) or 0 9 * * 1-5 (9:00 UTC on weekdays).';
  end if;
  minutes := baton_private.cron_field(f[1], 0, 59);
  hours := baton_private.cron_field(f[2], 0, 23);
  days := baton_private.cron_field(f[3], 1, 31);
  months := baton_private.cron_field(f[4], 1, 12);
  weekdays := array(select distinct (v % 7) from unnest(baton_private.cron_field(f[5], 0, 7)) v);
  for i in 1 .. 366 * 5 loop
    d := t::date;
    -- As cron has it: with both day fields restricted, either may match.
    day_ok := case
      when f[3] = '*' and f[5] = '*' then true
      when f[3] = '*' then extract(dow from d)::integer = any (weekdays)
      when f[5] = '*' then extract(day from d)::integer = any (days)
      else extract(day from d)::integer = any (days) or extract(dow from d)::integer = any (weekdays) end;
    if extract(month from d)::integer = any (months) and day_ok then
      foreach h in array hours loop
        continue when h < extract(hour from t);
        foreach mi in array minutes loop
          continue when h = extract(hour from t) and mi < extract(minute from t);
          return (d + make_interval(hours => h, mins => mi)) at time zone 'UTC';
        end loop;
      end loop;
    end if;
    t := (d + 1)::timestamp;
  end loop;
  raise exception 'the schedule "%" never fires', schedule using errcode = 'BT005', hint = 'Check the day and month fields (e.g. 31 2 never comes).';
end
$$;

revoke all on function baton_private.cron_next(text, timestamptz) from public, anon, authenticated;

create function baton_private.run_recurring() returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  r public.recurring_handoffs;
  made uuid;
  failure text;
  created integer := 0;
begin
  for r in
    select * from public.recurring_handoffs h where h.enabled and h.next_run_at <= now()
    order by h.next_run_at limit 100 for update skip locked
  loop
    made := null;
    failure := null;
    begin
      insert into public.task_handoffs (
        from_agent, to_agent, title, description, priority, payload, required_capabilities,
        max_attempts, lease_seconds, expected_outputs, recurring_id, recurrence_slot)
      values (
        r.from_agent, r.to_agent, r.template ->> 'title', r.template ->> 'description',
        coalesce(r.template ->> 'priority', 'medium')::public.task_priority, coalesce(r.template -> 'payload', '{}'),
        r.required_capabilities, coalesce((r.template ->> 'max_attempts')::integer, 3),
        (r.template ->> 'lease_seconds')::integer, coalesce(r.template -> 'expected_outputs', '[]'), r.id, r.next_run_at)
      on conflict (recurring_id, recurrence_slot) where recurring_id is not null do nothing
      returning id into made;
      created := created + (made is not null)::integer;
    exception when others then
      failure := sqlerrm;
    end;
    update public.recurring_handoffs
    set next_run_at = baton_private.cron_next(r.schedule, greatest(r.next_run_at, now())),
        last_run_at = now(), last_task_id = coalesce(made, last_task_id), last_error = failure
    where id = r.id;
  end loop;
  return created;
end
$$;

revoke all on function baton_private.run_recurring() from public, anon, authenticated;

create function baton_private.tg_recurring_handoffs__schedule() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.schedule is distinct from old.schedule or new.next_run_at is null then
    new.next_run_at := baton_private.cron_next(new.schedule, now());
  end if;
  return new;
end
$$;

revoke all on function baton_private.tg_recurring_handoffs__schedule() from public, anon, authenticated;

-- Deletes whole chains whose every task ended more than keep_finished ago, and that no open task names
-- as a dependency or an input. Events, artifacts and task messages go with their tasks (on delete
-- cascade); direct messages older than keep_finished go too.
create function baton_private.apply_retention() returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  keep interval := (baton_private.settings()).keep_finished;
  batch integer := (baton_private.settings()).retention_batch;
  cutoff timestamptz;
  needed uuid[];
  root uuid;
  size integer;
  deletable boolean;
  roots uuid[] := '{}';
  taken integer := 0;
  deleted integer := 0;
begin
  if keep is null then
    return 0;
  end if;
  cutoff := now() - keep;
  -- What open tasks still need: their dependencies, their inputs and what they retry.
  select coalesce(array_agg(distinct n.id), '{}') into needed from (
    select unnest(o.depends_on) as id from public.task_handoffs o
    where o.status in ('pending', 'claimed', 'in_progress', 'input_required') and o.depends_on <> '{}'
    union all
    select (i ->> 'task_id')::uuid from public.task_handoffs o cross join jsonb_array_elements(o.input_artifacts) i
    where o.status in ('pending', 'claimed', 'in_progress', 'input_required') and o.input_artifacts <> '[]'
    union all
    select o.retry_of from public.task_handoffs o
    where o.status in ('pending', 'claimed', 'in_progress', 'input_required') and o.retry_of is not null
  ) n;
  -- The oldest finished roots first; a chain goes whole or not at all, and a chain that must stay does
  -- not hold back the ones behind it (up to ten batches of roots are looked at per sweep).
  for root in
    select t.id from public.task_handoffs t
    where t.completed_at < cutoff and t.id = t.root_task_id
    order by t.completed_at limit batch * 10
  loop
    select count(*), bool_and(x.status in ('completed', 'failed', 'rejected', 'cancelled') and x.completed_at < cutoff)
                     and not bool_or(x.id = any (needed))
    into size, deletable
    from public.task_handoffs x where x.root_task_id = root;
    continue when not deletable or (taken > 0 and taken + size > batch);
    roots := roots || root;
    taken := taken + size;
    exit when taken >= batch;
  end loop;
  if cardinality(roots) > 0 then
    update public.recurring_handoffs set last_task_id = null
    where last_task_id in (select x.id from public.task_handoffs x where x.root_task_id = any (roots));
    delete from public.task_handoffs t where t.root_task_id = any (roots);
    get diagnostics deleted = row_count;
  end if;
  delete from public.agent_messages m
  where m.id in (select x.id from public.agent_messages x where x.task_id is null and x.created_at < cutoff limit batch);
  return deleted;
end
$$;

revoke all on function baton_private.apply_retention() from public, anon, authenticated;

create view public.dead_letters with (security_invoker = true) as
  select t.id, t.title, t.from_agent, t.to_agent, t.required_capabilities, t.claimed_by as last_holder, t.status_reason as reason,
         t.attempts, t.completed_at as failed_at, now() - t.completed_at as age,
         (select r.id from public.task_handoffs r where r.retry_of = t.id order by r.created_at desc limit 1) as retried_as
  from public.task_handoffs t
  where t.status = 'failed';

revoke all on public.dead_letters from anon, authenticated;
grant select on public.dead_letters to authenticated, service_role;

comment on view public.dead_letters is 'Failed tasks: why, who held them last, how long ago, and whether they were retried (baton retry <task>).';
comment on column public.dead_letters.id is 'The failed task.';
comment on column public.dead_letters.title is 'Its title.';
comment on column public.dead_letters.from_agent is 'Who sent it (who may retry it, with the operator).';
comment on column public.dead_letters.to_agent is 'Whom it was addressed to, or null for an offer.';
comment on column public.dead_letters.required_capabilities is 'What its taker had to be able to do.';
comment on column public.dead_letters.last_holder is 'The agent that held it when it failed.';
comment on column public.dead_letters.reason is 'Why it failed: the error reported, or the sweep''s reason.';
comment on column public.dead_letters.attempts is 'Attempts made.';
comment on column public.dead_letters.failed_at is 'When it failed.';
comment on column public.dead_letters.age is 'How long ago that was.';
comment on column public.dead_letters.retried_as is 'The newest task retrying it, if any.';

create view public.waiting_tasks with (security_invoker = true) as
  select t.id, t.title, t.from_agent, t.to_agent, t.dependency_mode, t.on_dependency_failure, t.waiting_on, t.depends_on,
         array(select d.id from public.task_handoffs d
               where d.id = any (t.depends_on) and d.status in ('pending', 'claimed', 'in_progress', 'input_required')) as open_dependencies,
         t.run_at, t.created_at
  from public.task_handoffs t
  where t.status = 'pending' and t.waiting_on > 0;

revoke all on public.waiting_tasks from anon, authenticated;
grant select on public.waiting_tasks to authenticated, service_role;

comment on view public.waiting_tasks is 'Pending tasks that wait for tasks they depend on, with the ones still open.';
comment on column public.waiting_tasks.id is 'The waiting task.';
comment on column public.waiting_tasks.title is 'Its title.';
comment on column public.waiting_tasks.from_agent is 'Who sent it.';
comment on column public.waiting_tasks.to_agent is 'Whom it is addressed to, or null for an offer.';
comment on column public.waiting_tasks.dependency_mode is 'all (every dependency must complete) or any (the first to complete releases it).';
comment on column public.waiting_tasks.on_dependency_failure is 'What a failed dependency does: cancel it, or let it run anyway.';
comment on column public.waiting_tasks.waiting_on is 'How many dependencies are still unresolved.';
comment on column public.waiting_tasks.depends_on is 'Every task it depends on.';
comment on column public.waiting_tasks.open_dependencies is 'The dependencies still open (that you may see).';
comment on column public.waiting_tasks.run_at is 'If set, it also waits for this time.';
comment on column public.waiting_tasks.created_at is 'When it was handed off.';

create trigger step5_wait_on_dependencies before insert on public.task_handoffs
  for each row when (new.depends_on <> '{}' or new.run_at is not null) execute function baton_private.tg_task_handoffs__wait_on_dependencies();

create trigger step1_keep_dependencies before update on public.task_handoffs
  for each row when (new.depends_on is distinct from old.depends_on or new.dependency_mode is distinct from old.dependency_mode
                     or new.on_dependency_failure is distinct from old.on_dependency_failure or new.retry_of is distinct from old.retry_of)
  execute function baton_private.tg_task_handoffs__keep_dependencies();

create trigger schedule before insert or update on public.recurring_handoffs
  for each row execute function baton_private.tg_recurring_handoffs__schedule();

create policy "Agents can view the schedules sent as them or addressed to them" on public.recurring_handoffs
  for select to authenticated
  using (from_agent = (select baton_private.current_agent_id()) or to_agent = (select baton_private.current_agent_id()));
