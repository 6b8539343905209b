-- What an agent holds, and its inbox, read in index order whatever the statistics say.
--
-- Open tasks are a sliver of a table that keeps its history, so ANALYZE's sample rarely holds one: the
-- planner then estimates that no task is open, and every partial index of open tasks looks equally
-- cheap to read whole. Among the reads that suffered from it (the others follow further down):
--
-- * The count of the tasks an agent holds, which every claim makes to know its free slots. With such
--   statistics it read every open task of the project through task_handoffs_open_from_agent_idx (no
--   index condition, so a little cheaper on paper than task_handoffs_held_idx). On a stack with a
--   million finished tasks and a backlog of 60,000 tasks for another capability, a claim and
--   completion cost 5.2 ms of Postgres per task instead of 0.9.
-- * The inbox (`baton tasks`: open tasks addressed to the agent or held by it). Its OR of two columns is
--   answered with a bitmap scan, which, unlike an index scan, never marks the entries of tasks that have
--   since finished as dead: each call visited their heap pages until vacuum removed them. After 3,000
--   tasks went through one agent, its empty inbox read 947 heap pages; on a large table autovacuum
--   comes rarely, so the inbox's cost grew with the work done since.
--
-- Both indexes now hold their tasks in inbox order (priority, then age), and both reads ask for that
-- order with sorting disabled (as the claim's queue reads do, …1600_queue_fronts.sql): the only plans
-- left without the penalty read these indexes in order, with index scans that mark dead entries as they
-- pass them.

drop index public.task_handoffs_held_idx;
create index task_handoffs_held_idx on public.task_handoffs (claimed_by, priority desc, created_at)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and claimed_by is not null;
drop index public.task_handoffs_open_to_agent_idx;
create index task_handoffs_open_to_agent_idx on public.task_handoffs (to_agent, priority desc, created_at)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and to_agent is not null;

-- As in …0600_hardening.sql; the count reads the agent's own held tasks, at most `cap` of them. (A
-- pending task has no holder, task_handoffs_holder_matches_status, so these are the held ones; naming
-- all four open statuses lets the index answer alone.)
create or replace function baton_private.free_capacity(agent text) returns integer
language plpgsql security definer set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
declare
  cap integer;
  held integer;
begin
  select a.max_concurrent into cap from public.agents a where a.id = agent for no key update;
  select count(*) into held from (
    select from public.task_handoffs t
    where t.claimed_by = agent and t.status in ('pending', 'claimed', 'in_progress', 'input_required')
    order by t.priority desc, t.created_at
    limit cap) h;
  return greatest(cap - held, 0);
end
$$;

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

-- Statements that find held tasks by id. They test the status too, and with the same statistics the
-- planner preferred reading every open task through task_handoffs_open_from_agent_idx (an index of
-- open tasks, estimated empty) to looking up the ids in the primary key: with the backlog above, a
-- report of ten outcomes read 60,000 rows and took 21 ms, a renewal of one claim 20 ms. Their status
-- tests now compare the status as text, which implies no index's predicate, so the primary key is the
-- only index that can serve them. Otherwise as in …1500_steady_plans.sql and …0100_holder_rhythm.sql.
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
  -- The plain completions, in step: the id, claim token, result and task id as the caller wrote it.
  ids uuid[];
  tokens uuid[];
  results jsonb[];
  raw_ids text[];
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
    )
    select array_agg(a.raw_id::uuid), array_agg(a.raw_token::uuid), array_agg(a.result), array_agg(a.raw_id)
    into ids, tokens, results, raw_ids
    from counted a
    where a.raw_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      and a.raw_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      and jsonb_typeof(a.result) = 'object' and not a.result ? 'handoff'
      -- A task named twice is answered one by one (the second is refused), not in the batch.
      and a.times = 1;
    -- Each task's own values are found by its position in the arrays, not by joining them with the
    -- tasks: estimated at one row each side, that join was a nested loop of 1,000 × 1,000.
    with completed as (
      update public.task_handoffs t
      set status = 'completed', result = results[array_position(ids, t.id)], status_reason = null, problems = null
      where t.id = any (ids) and t.claimed_by = me and t.claim_token = tokens[array_position(ids, t.id)]
        -- As text, so that no index of open tasks can stand in for the primary key (see above).
        and t.status::text = 'in_progress'
        and not exists (select from jsonb_array_elements(t.expected_outputs) e
                        where coalesce((e ->> 'required')::boolean, true)
                          and not exists (select from public.task_artifacts x where x.task_id = t.id and x.name = e ->> 'name'))
      returning raw_ids[array_position(ids, t.id)] as raw_id
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

create or replace function public.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
returns table (task_id uuid, status public.task_status, current boolean, lease_expires_at timestamptz)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
begin
  if cardinality(p_task_ids) is distinct from cardinality(p_claim_tokens) then
    raise exception 'give one claim token for each task id' using errcode = 'BT005', hint = 'Pass the two arrays in the same order.';
  end if;
  if p_renew then
    update public.task_handoffs t
    set lease_expires_at = now() + coalesce(t.claim_lease, (baton_private.settings()).default_lease)
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me
      and t.status::text in ('claimed', 'in_progress');  -- as text: see above
  end if;
  return query
    select c.id, t.status,
           coalesce(t.claimed_by = me and t.claim_token = c.token and t.status in ('claimed', 'in_progress', 'input_required'), false),
           case when t.status in ('claimed', 'in_progress') then baton_private.claim_expires_at(t, a) else t.lease_expires_at end
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    left join public.task_handoffs t on t.id = c.id and baton_private.can_see_task(t, me)
    left join public.agents a on a.id = t.claimed_by;
end
$$;

-- The sweep's searches. With the same statistics, the lapsed claims and the overdue tasks were looked
-- for by reading every open task through task_handoffs_open_from_agent_idx: with the backlog above, a
-- sweep took 150-200 ms, once a minute. Each search now reads its own index (leases, deadlines) in that
-- index's order, with sorting disabled, in a helper of its own so that the setting does not reach the
-- triggers the sweep's updates fire. What the sweep does is as in …1200_workflows.sql.

-- Claims in `held_status` that lapsed, locked (skipping those locked elsewhere), with why they lapsed
-- and whether the task was on its last attempt.
create function baton_private.lapsed_claims(held_status public.task_status)
returns table (id uuid, reason text, last_attempt boolean)
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
rows 10
as $$
begin
  return query
    select t.id, baton_private.lapse_reason(t, a), t.attempts >= t.max_attempts
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    -- The literal statuses let task_handoffs_leases_idx serve whichever one is asked for.
    where t.status in ('claimed', 'in_progress') and t.status = held_status
      and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
    order by t.lease_expires_at
    for update of t skip locked;
end
$$;

-- Pending tasks past their deadline, locked (skipping those locked elsewhere).
create function baton_private.overdue_tasks() returns table (id uuid)
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
rows 10
as $$
begin
  return query
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.deadline < now()
    order by t.deadline
    for update skip locked;
end
$$;
revoke all on function baton_private.lapsed_claims(public.task_status), baton_private.overdue_tasks() from public, anon, authenticated;

create or replace function public.sweep_tasks() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  unstarted integer;
  expired integer;
  dead integer;
  overdue integer;
  recurring integer;
  removed integer;
begin
  if not pg_try_advisory_xact_lock(hashtext('baton.sweep_tasks')) then
    return jsonb_build_object('requeued_unstarted', 0, 'requeued_expired', 0, 'dead_lettered', 0, 'deadline_cancelled', 0,
                              'recurring_created', 0, 'retention_deleted', 0);
  end if;
  perform set_config('baton.actor', 'sweep', true);

  perform baton_private.set_note('claim lapsed before the work started; re-queued');
  with due as (select l.id, l.reason from baton_private.lapsed_claims('claimed') l)
  update public.task_handoffs t
  set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = due.reason || '; not started'
  from due where t.id = due.id;
  get diagnostics unstarted = row_count;

  perform baton_private.set_note('claim lapsed; re-queued');
  with due as (select l.id, l.reason from baton_private.lapsed_claims('in_progress') l where not l.last_attempt)
  update public.task_handoffs t
  set status = 'pending', status_reason = format('%s; re-queued after attempt %s of %s', due.reason, t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics expired = row_count;

  perform baton_private.set_note('claim lapsed on the last attempt; failed');
  with due as (select l.id, l.reason from baton_private.lapsed_claims('in_progress') l where l.last_attempt)
  update public.task_handoffs t
  set status = 'failed', status_reason = format('%s; failed on the last attempt (%s of %s)', due.reason, t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics dead = row_count;

  perform baton_private.set_note('deadline passed');
  with due as (select o.id from baton_private.overdue_tasks() o)
  update public.task_handoffs t set status = 'cancelled', status_reason = 'deadline passed'
  from due where t.id = due.id;
  get diagnostics overdue = row_count;

  perform baton_private.set_note('made by its schedule');
  recurring := baton_private.run_recurring();
  perform baton_private.set_note(null);
  removed := baton_private.apply_retention();

  perform set_config('baton.actor', '', true);
  return jsonb_build_object(
    'requeued_unstarted', unstarted, 'requeued_expired', expired, 'dead_lettered', dead, 'deadline_cancelled', overdue,
    'recurring_created', recurring, 'retention_deleted', removed);
end
$$;
