-- Finding what waits on a task that ended, once per statement and only through the dependency index.
--
-- The row trigger of …1200_workflows.sql looked for dependents with a query that also filtered on
-- status = 'pending'. With statistics from an emptier table the planner preferred a partial index on
-- open tasks and filtered it row by row, so every completion read every open task: with 3,000 tasks
-- queued a report of 10 outcomes took 40 ms instead of 10. Now one statement trigger gathers the tasks
-- the statement ended, asks the GIN index on depends_on which of them anything waits for (usually
-- none, and then nothing else runs), and moves the dependents of those exactly as before.

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

-- What waits on one task that ended moves: released, counted down, or cancelled with the reason.
-- A cancelled dependent ends too, so the cascade follows the whole graph. (The body of the former row
-- trigger; dependents are locked one by one in id order, as before.)
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

drop trigger release_dependents on public.task_handoffs;
drop function baton_private.tg_task_handoffs__release_dependents();

create function baton_private.tg_task_handoffs__release_dependents() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  ended_ids uuid[];
  ended public.task_handoffs;
begin
  select array_agg(n.id) into ended_ids
  from changed n join previous o on o.id = n.id
  where n.status in ('completed', 'failed', 'rejected', 'cancelled') and o.status is distinct from n.status;
  if ended_ids is null then
    return null;
  end if;
  for ended in
    select n.* from changed n
    where n.id in (select x.depends_on_id from baton_private.dependents_of(ended_ids) x)
    order by n.id
  loop
    perform baton_private.release_dependents_of(ended);
  end loop;
  return null;
end
$$;
create trigger release_dependents after update on public.task_handoffs
  referencing old table as previous new table as changed
  for each statement execute function baton_private.tg_task_handoffs__release_dependents();

-- Push announcements straight from the statement's rows ----------------------------------------------
-- The announce triggers of …1100_push.sql turned the statement's rows into JSON, read them back in
-- announce_changes and grouped them in announce: a third of a millisecond per task claimed or
-- completed. The same messages now come from one query over the transition tables: per topic and
-- event, the tasks (id, status, not_before), at most 100, in id order. announce_changes stays for the
-- one task a dependency releases.

create function baton_private.tg_task_handoffs__announce_created() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  perform realtime.send(
    jsonb_build_object('tasks', jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', m.id, 'status', m.status, 'not_before', m.not_before)) order by m.id)),
    'work', m.topic, true)
  from (
    select c.id, c.status, c.not_before, t.topic, row_number() over (partition by t.topic order by c.id) as nth
    from created c
    cross join lateral (select case when c.to_agent is not null then 'agent:' || c.to_agent
                                    when cardinality(c.required_capabilities) = 0 then 'tasks:open'
                                    else 'capability:' || c.required_capabilities[1] end as topic) t
    -- A task that waits for others is announced when they release it, not before.
    where c.status = 'pending' and c.not_before is distinct from 'infinity'::timestamptz
  ) m
  where m.nth <= 100
  group by m.topic;
  return null;
end
$$;

create function baton_private.tg_task_handoffs__announce_changed() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  perform realtime.send(
    jsonb_build_object('tasks', jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', m.id, 'status', m.status, 'not_before', m.not_before)) order by m.id)),
    m.event, m.topic, true)
  from (select u.*, row_number() over (partition by u.topic, u.event order by u.id) as nth from (
    -- Work for whoever may claim it: a task that became pending, or pending for someone else.
    select case when c.to_agent is not null then 'agent:' || c.to_agent
                when cardinality(c.required_capabilities) = 0 then 'tasks:open'
                else 'capability:' || c.required_capabilities[1] end as topic,
           'work' as event, c.id, c.status, c.not_before
    from changed c join previous p on p.id = c.id
    where c.status = 'pending' and (p.status <> 'pending' or c.to_agent is distinct from p.to_agent)
      and c.not_before is distinct from 'infinity'::timestamptz
    union all
    -- News of a task for its sender and its holders, old and new.
    select 'agent:' || w.who, 'task', c.id, c.status, null
    from changed c join previous p on p.id = c.id
    cross join lateral (select distinct x.who from unnest(array[c.from_agent, c.claimed_by, p.claimed_by]) as x (who)) w
    where w.who is not null and (c.status <> p.status or c.progress_at is distinct from p.progress_at)
  ) u) m
  where m.nth <= 100
  group by m.topic, m.event;
  return null;
end
$$;

drop trigger announce_created on public.task_handoffs;
drop trigger announce_changed on public.task_handoffs;
drop function baton_private.tg_task_handoffs__announce();
create trigger announce_created after insert on public.task_handoffs
  referencing new table as created
  for each statement execute function baton_private.tg_task_handoffs__announce_created();
create trigger announce_changed after update on public.task_handoffs
  referencing old table as previous new table as changed
  for each statement execute function baton_private.tg_task_handoffs__announce_changed();

-- The settings row, read by nearly every rule: PL/pgSQL keeps the plan of its one query for the
-- session, where a SQL function that reads a table (never inlined) plans it again on every call.
create or replace function baton_private.settings() returns public.baton_settings
language plpgsql stable
as $$
declare
  s public.baton_settings;
begin
  select * into s from public.baton_settings where id;
  return s;
end
$$;

revoke all on function baton_private.dependents_of(uuid[]) from public, anon, authenticated;
revoke all on function baton_private.release_dependents_of(public.task_handoffs) from public, anon, authenticated;
revoke all on function baton_private.tg_task_handoffs__release_dependents() from public, anon, authenticated;
revoke all on function baton_private.tg_task_handoffs__announce_created() from public, anon, authenticated;
revoke all on function baton_private.tg_task_handoffs__announce_changed() from public, anon, authenticated;

-- Result messages ----------------------------------------------------------------------------------
-- The message that tells a sender how its task ended is written by notify_sender from the task's
-- status, result and reason, each already checked on the task (a result may be 256 KiB). The limits on
-- what agents send (64 KiB, JSON shape, the per-minute quota) wrongly applied to it as well: a result
-- between 64 and 256 KiB made its completion fail with "the message is … bytes". They now apply to
-- the messages agents write, and are not evaluated for the result messages at all.
create or replace function baton_private.tg_agent_messages__validate() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.kind <> 'result' and octet_length(new.body::text) > 65536 then
      raise exception 'the message is % bytes; the limit is 64 KiB', octet_length(new.body::text)
        using errcode = 'BT005', hint = 'Send a link to long material instead.';
    end if;
    new.created_at := now();
    new.read_at := null;
  elsif new.id <> old.id or new.from_agent <> old.from_agent or new.to_agent is distinct from old.to_agent
        or new.task_id is distinct from old.task_id or new.body <> old.body or new.kind <> old.kind
        or new.created_at <> old.created_at or new.reply_to_id is distinct from old.reply_to_id then
    raise exception 'a sent message cannot change' using errcode = 'BT005', hint = 'Send a new message instead.';
  end if;
  return new;
end
$$;

drop trigger limit_json on public.agent_messages;
create trigger limit_json before insert on public.agent_messages
  for each row when (new.kind <> 'result') execute function baton_private.tg_agent_messages__limit_json();
drop trigger quota on public.agent_messages;
create trigger quota before insert on public.agent_messages
  for each row when (new.kind in ('note', 'progress')) execute function baton_private.tg_agent_messages__quota();

-- A new task reads the settings only when it has a parent whose chain depth they limit.
create or replace function baton_private.tg_task_handoffs__prepare_insert() returns trigger
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

-- Batches answer in one statement ------------------------------------------------------------------
-- handoff_tasks and report_outcomes answered item by item, a RETURN QUERY per task. The items that
-- took the set-based path are now answered together, the others as before, all in the order given.
-- The rules are those of …1200_workflows.sql and …0900_lean_paths.sql.

create or replace function public.handoff_tasks(p_tasks jsonb)
returns table (index integer, task_id uuid, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  settings public.baton_settings := baton_private.settings();
  usage public.agent_usage;
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
  insert into public.agent_usage as u (agent_id) values (me) on conflict (agent_id) do nothing;
  select * into usage from public.agent_usage u where u.agent_id = me for update;
  if usage.open_tasks + jsonb_array_length(p_tasks) > settings.open_tasks_per_sender then
    usage.open_tasks := baton_private.recount_open_tasks(me, 0);
  end if;
  allowance := least(
    settings.handoffs_per_minute - case when usage.minute = date_trunc('minute', now()) then usage.handoffs else 0 end,
    settings.open_tasks_per_sender - usage.open_tasks);
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
  update public.agent_usage u
  set minute = date_trunc('minute', now()),
      handoffs = case when u.minute = date_trunc('minute', now()) then u.handoffs else 0 end + count_made,
      open_tasks = u.open_tasks + count_made
  where u.agent_id = me;
  return query
    select q.key::integer, (q.value #>> '{}')::uuid, null::text, null::text, null::text from jsonb_each(quick) q
    union all
    select a.index, a.task_id, a.code, a.message, a.hint
    from unnest(answers) as x, jsonb_to_record(x) as a (index integer, task_id uuid, code text, message text, hint text)
    order by 1;
end
$$;

create or replace function public.report_outcomes(p_outcomes jsonb)
returns table (task_id uuid, status public.task_status, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  outcome jsonb;
  n bigint;
  done public.task_handoffs;
  err_hint text;
  plain text[] := '{}';
  -- The answers for the outcomes not completed together, one object each, with their position.
  answers jsonb[] := '{}';
begin
  if jsonb_typeof(p_outcomes) <> 'array' or jsonb_array_length(p_outcomes) > 1000 then
    raise exception 'outcomes must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"task_id": "…", "claim_token": "…", "result": {"status": "success"}}, …].';
  end if;
  perform set_config('baton.batch', 'on', true);
  -- Plain completions of tasks the caller holds, each named once: one UPDATE for them all.
  begin
    with asked as (
      select o ->> 'task_id' as raw_id, o ->> 'claim_token' as raw_token, coalesce(o -> 'result', '{"status": "success"}') as result
      from jsonb_array_elements(p_outcomes) o
      where jsonb_typeof(o) = 'object' and not o ? 'error'
    ), counted as (
      select a.*, count(*) over (partition by a.raw_id) as times from asked a
    ), once as materialized (
      select a.raw_id::uuid as id, a.raw_token::uuid as token, a.raw_id, a.result
      from counted a
      where a.raw_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        and a.raw_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        and jsonb_typeof(a.result) = 'object' and not a.result ? 'handoff'
        -- A task named twice is answered one by one (the second is refused), not in the batch.
        and a.times = 1
    ), completed as (
      update public.task_handoffs t
      set status = 'completed', result = once.result, status_reason = null, problems = null
      from once
      where t.id = once.id and t.claimed_by = me and t.claim_token = once.token and t.status = 'in_progress'
        and not exists (select from jsonb_array_elements(t.expected_outputs) e
                        where coalesce((e ->> 'required')::boolean, true)
                          and not exists (select from public.task_artifacts x where x.task_id = t.id and x.name = e ->> 'name'))
      returning once.raw_id
    )
    select coalesce(array_agg(completed.raw_id), '{}') into plain from completed;
  exception when others then
    plain := '{}';
  end;
  -- The others one by one, through complete_task and fail_task, each refused on its own.
  for outcome, n in
    select a.o, a.n from jsonb_array_elements(p_outcomes) with ordinality as a (o, n)
    where a.o ? 'error' or not coalesce(a.o ->> 'task_id' = any (plain), false)
    order by a.n
  loop
    begin
      if outcome ? 'error' then
        done := public.fail_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid, outcome ->> 'error',
                                 coalesce((outcome ->> 'retry')::boolean, false), outcome -> 'problems');
      else
        done := public.complete_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid,
                                     coalesce(outcome -> 'result', '{"status": "success"}'));
      end if;
      answers := answers || jsonb_build_object('n', n, 'task_id', done.id, 'status', done.status);
    exception when others then
      get stacked diagnostics err_hint = pg_exception_hint;
      answers := answers || jsonb_build_object('n', n,
        'task_id', case when outcome ->> 'task_id' ~ '^[0-9a-f-]{36}$' then outcome ->> 'task_id' end,
        'code', sqlstate, 'message', sqlerrm, 'hint', nullif(err_hint, ''));
    end;
  end loop;
  perform set_config('baton.batch', '', true);
  return query
    select r.task_id, r.status, r.code, r.message, r.hint from (
      select a.n, (a.o ->> 'task_id')::uuid as task_id, 'completed'::public.task_status as status,
             null::text as code, null::text as message, null::text as hint
      from jsonb_array_elements(p_outcomes) with ordinality as a (o, n)
      where not a.o ? 'error' and a.o ->> 'task_id' = any (plain)
      union all
      select s.n, s.task_id, s.status, s.code, s.message, s.hint
      from unnest(answers) as x,
           jsonb_to_record(x) as s (n bigint, task_id uuid, status public.task_status, code text, message text, hint text)
    ) r
    order by r.n;
end
$$;

-- Indexes only where a row has something to index ------------------------------------------------
-- Every claim and completion writes a new version of the task into each of its indexes. Three indexed
-- columns that most tasks leave empty (idempotency_key, recurring_id with recurrence_slot, to_agent
-- for broadcasts) cost three entries per version for nothing: they now index only the rows that set
-- them. A unique index that is partial must be named with its condition in ON CONFLICT, so the three
-- functions that insert with ON CONFLICT say it; nothing else in them changes.
alter table public.task_handoffs drop constraint task_handoffs_idempotency_key_per_sender;
create unique index task_handoffs_idempotency_key_per_sender on public.task_handoffs (from_agent, idempotency_key)
  where idempotency_key is not null;
alter table public.task_handoffs drop constraint task_handoffs_one_per_slot;
create unique index task_handoffs_one_per_slot on public.task_handoffs (recurring_id, recurrence_slot)
  where recurring_id is not null;
drop index public.task_handoffs_to_agent_idx;
create index task_handoffs_to_agent_idx on public.task_handoffs (to_agent, created_at desc) where to_agent is not null;

create or replace function public.handoff_task(
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

create or replace function baton_private.create_follow_up(parent public.task_handoffs, request jsonb, agent text) returns uuid
language plpgsql security definer set search_path = ''
as $$
declare
  child uuid;
begin
  if request ? 'to_agent' and not exists (select from public.agents a where a.id = request ->> 'to_agent') then
    raise exception 'the follow-up names no agent "%"', request ->> 'to_agent'
      using errcode = 'BT002', hint = 'Name a registered agent, or a capability instead.';
  end if;
  if request ? 'payload' and jsonb_typeof(request -> 'payload') <> 'object' then
    raise exception 'the follow-up''s payload must be a JSON object' using errcode = 'BT005', hint = 'Pass {"payload": {...}} or none.';
  end if;
  insert into public.task_handoffs (
    from_agent, to_agent, required_capabilities, title, description, payload, expected_outputs, input_artifacts,
    parent_task_id, idempotency_key
  ) values (
    agent,
    request ->> 'to_agent',
    case jsonb_typeof(request -> 'capability')
      when 'string' then array[request ->> 'capability']
      when 'array' then array(select jsonb_array_elements_text(request -> 'capability'))
      else '{}' end,
    request ->> 'title',
    request ->> 'reason',
    coalesce(request -> 'payload', '{}') || jsonb_strip_nulls(jsonb_build_object('task_type', request -> 'task_type', 'context', request -> 'context')),
    coalesce(request -> 'expected_outputs', '[]'),
    coalesce((
      select jsonb_agg(jsonb_build_object('task_id', parent.id, 'name', a.name) order by a.name)
      from public.task_artifacts a where a.task_id = parent.id), '[]'),
    parent.id,
    'follow-up:' || parent.id
  )
  on conflict (from_agent, idempotency_key) where idempotency_key is not null do nothing
  returning id into child;
  return child;
end
$$;

create or replace function baton_private.run_recurring() returns integer
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

-- The tasks report_and_claim hands back, as json: building jsonb parses and sorts every row it
-- serialises (about 100 µs a task, three times json's cost), and PostgREST sends text either way.
drop function public.report_and_claim(jsonb, integer, text[], integer);
create function public.report_and_claim(
  p_outcomes jsonb,
  p_claim integer default 0,
  p_capabilities text[] default null,
  p_lease_seconds integer default null
) returns json
language plpgsql security definer set search_path = ''
as $$
declare
  outcomes json;
  claimed json := '[]';
  refused json;
  err_hint text;
begin
  select coalesce(json_agg(o), '[]') into outcomes from public.report_outcomes(p_outcomes) o;
  if coalesce(p_claim, 0) > 0 then
    -- A claim refused (capacity, a quota) never takes the outcomes with it.
    begin
      select coalesce(json_agg(t), '[]') into claimed
      from public.claim_next_tasks(p_limit => p_claim, p_capabilities => p_capabilities, p_lease_seconds => p_lease_seconds, p_start => true) t;
    exception when others then
      get stacked diagnostics err_hint = pg_exception_hint;
      refused := json_build_object('code', sqlstate, 'message', sqlerrm, 'hint', nullif(err_hint, ''));
    end;
  end if;
  return json_build_object('outcomes', outcomes, 'claimed', claimed, 'claim_error', refused);
end
$$;
comment on function public.report_and_claim is 'report_outcomes(p_outcomes), then claim_next_tasks for up to p_claim tasks (started), in one request: {outcomes: [as report_outcomes], claimed: [tasks], claim_error: {code, message, hint} or null}. What a daemon with free slots calls when it reports.';
revoke all on function public.report_and_claim from public, anon;
grant execute on function public.report_and_claim to authenticated;

-- Per request and per claim -------------------------------------------------------------------------
-- SQL functions that read a table, or carry a SET clause, are never inlined, and PostgreSQL (up to 17)
-- plans their statement again on every call: 0.2 to 0.35 ms each for the three below, which run on
-- every request (record_beat, rest_write_hint) or claim (agent_capabilities). In PL/pgSQL the plan is
-- kept for the session. Nothing they answer changes.
create or replace function baton_private.rest_write_hint(relation text, method text) returns text
language plpgsql immutable
as $$
begin
  if relation = 'rpc' then
    return null;
  end if;
  return case
    when relation = 'task_handoffs' and method = 'POST' then
      'Hand off through the RPC: POST /rest/v1/rpc/handoff_task with {"p_title": "...", "p_to_agent": "cheenu", "p_priority": "high", "p_payload": {}} (null p_to_agent broadcasts); the sender is taken from your token.'
    when relation = 'task_handoffs' and method in ('PATCH', 'PUT') then
      'Change a task through its RPC: rpc/claim_task {"p_task_id": "...", "p_start": true}, rpc/complete_task {"p_task_id", "p_claim_token", "p_result"}, rpc/fail_task {"p_task_id", "p_claim_token", "p_error"}, rpc/reject_task {"p_task_id", "p_reason"}, rpc/report_progress, rpc/release_task or rpc/cancel_task.'
    when relation = 'task_handoffs' and method = 'DELETE' then
      'Tasks are never deleted: the sender withdraws one with POST /rest/v1/rpc/cancel_task {"p_task_id": "...", "p_reason": "..."}.'
    when relation = 'task_artifacts' then
      'The holder attaches artifacts with POST /rest/v1/rpc/attach_artifact {"p_task_id", "p_name", "p_media_type", "p_content" (hex) or "p_uri"}.'
    when relation = 'task_events' then
      'Task history is written by the database as tasks change; change the task through its RPC instead.'
    when relation = 'agents' and method in ('POST', 'PUT', 'DELETE') then
      'Agents are registered and removed by an operator (baton agent create <id>); an agent changes only its own row: PATCH /rest/v1/agents?id=eq.<you> with {"status_message", "capabilities", "poll_interval", "is_active", "last_heartbeat"}, or POST /rest/v1/rpc/send_heartbeat.'
    when relation in ('agent_tokens', 'baton_settings', 'task_status_transitions', 'task_declines', 'agent_presence', 'task_lineage') then
      pg_catalog.format('%s is read-only for agents; an operator changes it with the service-role key.', relation)
  end;
end
$$;

create or replace function baton_private.record_beat(agent text) returns void
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

create or replace function baton_private.agent_capabilities(agent text) returns text[]
language plpgsql stable security definer set search_path = ''
as $$
begin
  return coalesce((select a.capabilities from public.agents a where a.id = agent), '{}');
end
$$;

-- Claiming broadcasts capability by capability ----------------------------------------------------
-- claim_next_tasks read the broadcasts in one queue by priority and age and skipped those needing a
-- capability the caller lacks: behind 40,000 pending tasks for another capability, every claim read
-- all 40,000 (4 to 7 ms of Postgres per task instead of 1). The queue is now indexed by a task's first
-- required capability (the one its push announcement names, '' for none): a task the caller can do
-- has its first capability among the caller's, so the claim reads, for each of them, only the front of
-- that capability's queue, and merges them by priority and age. Each capability's front is locked with
-- SKIP LOCKED as before, so agents claiming at once still pass each other; the few rows locked and
-- not taken are free again when the claim commits.
create index task_handoffs_claimable_capability_idx on public.task_handoffs
  ((coalesce(required_capabilities[1], '')), priority desc, created_at)
  where status = 'pending' and to_agent is null;
drop index public.task_handoffs_claimable_broadcast_idx;
-- The indexes of tasks addressed to an agent hold only those: one that also held the broadcasts (to_agent
-- null) offered the planner a way to read every pending broadcast, which it took for a claim while
-- its statistics still described an emptier table.
drop index public.task_handoffs_claimable_direct_idx;
create index task_handoffs_claimable_direct_idx on public.task_handoffs (to_agent, priority desc, created_at)
  where status = 'pending' and to_agent is not null;
drop index public.task_handoffs_open_to_agent_idx;
create index task_handoffs_open_to_agent_idx on public.task_handoffs (to_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and to_agent is not null;

create or replace function public.claim_next_tasks(
  p_limit integer default 1,
  p_capabilities text[] default null,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns setof public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  wanted integer;
  mine text[];
  queues text[];
  ids uuid[];
  more uuid[];
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'a batch must claim between 1 and 1000 tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Ask for as many tasks as you have free slots.';
  end if;
  mine := baton_private.agent_capabilities(me);
  -- The queues of broadcasts this agent may take: one per capability it has, and '' for those that need none.
  queues := array(select distinct q from unnest(mine || ''::text) as q);
  -- Look before locking anything: an empty poll writes nothing.
  if not exists (
       select from public.task_handoffs t
       where t.status = 'pending' and t.to_agent = me and (t.not_before is null or t.not_before <= now()))
     and not exists (
       -- A lateral LIMIT 1 per queue, so that each reads its own part of the index (as a semi-join
       -- the planner's generic plan read every open task instead).
       select from unnest(queues) as q (capability)
       cross join lateral (
         select from public.task_handoffs t
         where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
           and t.required_capabilities <@ mine and (t.not_before is null or t.not_before <= now())
           and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
         limit 1) found) then
    return;
  end if;
  wanted := least(p_limit, baton_private.free_capacity(me));
  if wanted < 1 then
    return;
  end if;

  -- Tasks addressed to the agent come first, then broadcasts it can do; each by priority, then age.
  select coalesce(array_agg(picked.id), '{}') into ids from (
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.to_agent = me
      and (t.not_before is null or t.not_before <= now())
      and (p_capabilities is null or t.required_capabilities @> p_capabilities)
    order by t.priority desc, t.created_at
    limit wanted
    for update skip locked
  ) picked;

  if cardinality(ids) < wanted then
    select coalesce(array_agg(picked.id), '{}') into more from (
      select front.id from unnest(queues) as q (capability)
      cross join lateral (
        select t.id, t.priority, t.created_at from public.task_handoffs t
        where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
          and t.required_capabilities <@ mine
          and (t.not_before is null or t.not_before <= now())
          and (p_capabilities is null or t.required_capabilities @> p_capabilities)
          and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
        order by t.priority desc, t.created_at
        limit wanted - cardinality(ids)
        for update of t skip locked
      ) front
      order by front.priority desc, front.created_at
      limit wanted - cardinality(ids)
    ) picked;
    ids := ids || more;
  end if;

  perform baton_private.mark_claimed(ids, me, lease, p_start);
  return query
    select * from public.task_handoffs where id = any (ids) order by priority desc, created_at;
end
$$;
