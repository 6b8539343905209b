-- Claims: who may claim which task and how many, leases, starting, and every report of an outcome
-- (complete, fail, decline, reject, release, progress), single and batched. A claim is a status change
-- (pending to claimed or in_progress) that sets the holder and a fresh claim_token; every later report
-- presents that token, so a holder that lost the claim (fenced) cannot report over its successor.

-- Declines ------------------------------------------------------------------------------------------
-- Work an agent cannot do is declined, not failed: a task addressed to it is rejected with the reason,
-- and a broadcast goes back to pending for a capable peer and is never claimed by this agent again.
-- Neither counts as an attempt.
create table public.task_declines (
  task_id uuid not null,
  agent_id text not null,
  reason text not null,
  declined_at timestamp with time zone not null default now(),
  constraint task_declines_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE,
  constraint task_declines_pkey PRIMARY KEY (task_id, agent_id),
  constraint task_declines_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.task_handoffs(id) ON DELETE CASCADE
);
alter table public.task_declines enable row level security;

revoke all on table public.task_declines from anon, authenticated;
grant select on table public.task_declines to authenticated;
grant all on table public.task_declines to service_role;

comment on table public.task_declines is 'Broadcasts an agent claimed and handed back because it cannot do them (e.g. no executor for the task type). claim_next_tasks never offers such a task to that agent again.';
comment on column public.task_declines.reason is 'What the agent lacked, e.g. no executor for task_type "development".';

create index task_handoffs_leases_idx on public.task_handoffs (lease_expires_at)
  where status in ('claimed', 'in_progress');

create index task_declines_agent_idx on public.task_declines (agent_id);

-- Claiming broadcasts capability by capability ----------------------------------------------------
-- Read as one queue by priority and age, skipping those needing a capability the caller lacks, the
-- broadcasts behind 40,000 pending tasks for another capability cost every claim a read of all 40,000
-- (4 to 7 ms of Postgres per task instead of 1). So the queue is indexed by a task's first
-- required capability (the one its push announcement names, '' for none): a task the caller can do
-- has its first capability among the caller's, so the claim reads, for each of them, only the front of
-- that capability's queue, and merges them by priority and age. Each capability's front is locked with
-- SKIP LOCKED, so agents claiming at once still pass each other; the few rows locked and
-- not taken are free again when the claim commits.
create index task_handoffs_claimable_capability_idx on public.task_handoffs
  ((coalesce(required_capabilities[1], '')), priority desc, created_at)
  where status = 'pending' and to_agent is null;

create index task_handoffs_claimable_direct_idx on public.task_handoffs (to_agent, priority desc, created_at)
  where status = 'pending' and to_agent is not null;

create index task_handoffs_held_idx on public.task_handoffs (claimed_by, priority desc, created_at)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and claimed_by is not null;

-- Claims: a task that waits says what it waits for; a scheduled one says when.
create function public.claim_task(
  p_task_id uuid,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  free integer := baton_private.free_capacity(me);
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.to_agent is not null and t.to_agent <> me then
    raise exception 'task % is addressed to "%"; only that agent can claim it', t.id, t.to_agent
      using errcode = 'BT003', hint = 'Ask its sender to reassign it, or claim a task addressed to you.';
  end if;
  if t.to_agent is null and not t.required_capabilities <@ baton_private.agent_capabilities(me) then
    raise exception 'task % needs capabilities % that agent "%" lacks', t.id,
      array_to_string(t.required_capabilities, ', '), me
      using errcode = 'BT003', hint = 'Only agents holding every required capability can claim a broadcast.';
  end if;
  if t.status in ('claimed', 'in_progress', 'input_required') then
    raise exception 'task % is already claimed by "%"', t.id, t.claimed_by
      using errcode = 'BT004', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.status <> 'pending' then
    raise exception 'task % is %; only pending tasks can be claimed', t.id, t.status
      using errcode = 'BT001', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.waiting_on > 0 then
    raise exception 'task % waits for % of the tasks it depends on', t.id, t.waiting_on
      using errcode = 'BT015', hint = format('It becomes claimable when they complete: %s.', array_to_string(t.depends_on, ', '));
  end if;
  if t.not_before > now() then
    if t.attempts = 0 and t.run_at is not null then
      raise exception 'task % is scheduled for %', t.id, t.not_before
        using errcode = 'BT014',
              hint = format('Claim it in %s s.', greatest(ceil(extract(epoch from t.not_before - now())), 1));
    end if;
    raise exception 'task % is backing off after a failure until %', t.id, t.not_before
      using errcode = 'BT014',
            hint = format('Claim it again in %s s.', greatest(ceil(extract(epoch from t.not_before - now())), 1));
  end if;
  if free < 1 then
    raise exception 'agent "%" already holds as many tasks as its max_concurrent allows', me
      using errcode = 'BT008', hint = 'Finish or release a task first, or raise max_concurrent.';
  end if;

  perform baton_private.mark_claimed(array[t.id], me, lease, p_start);
  select * into t from public.task_handoffs where id = t.id;
  return t;
end
$$;

revoke all on function public.claim_task from public, anon;
grant execute on function public.claim_task to authenticated;

comment on function public.claim_task is 'Claims one task for the calling agent (and starts it with p_start). Of agents racing for a task exactly one wins; the others get BT004.';

-- The claim that daemons make: addressed tasks first, then broadcasts the agent can do, each queue read
-- from its front by baton_private.lock_claimable (below). It runs on its generic plans
-- (plan_cache_mode): PostgreSQL chose custom plans for some of its statements and planned them again
-- on every call; the generic plans read the same indexes (each queue's own, the addressed tasks' own,
-- task_handoffs_pkey for the claimed ids). Measured without HTTP, 10 tasks per claim: 1.15-1.22 →
-- 0.96-1.07 ms of Postgres CPU per claim and completion.
create function public.claim_next_tasks(
  p_limit integer default 1,
  p_capabilities text[] default null,
  p_lease_seconds integer default null,
  p_start boolean default false
) returns setof public.task_handoffs
language plpgsql security definer set search_path = '' set plan_cache_mode = force_generic_plan
as $$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  wanted integer;
  mine text[];
  queues text[];
  ids uuid[];
begin
  if p_limit is null or p_limit not between 1 and 1000 then
    raise exception 'a batch must claim between 1 and 1000 tasks, got %', p_limit
      using errcode = 'BT005', hint = 'Ask for as many tasks as you have free slots.';
  end if;
  mine := baton_private.agent_capabilities(me);
  -- The queues of broadcasts this agent may take: one per capability it has, and '' for those that need none.
  queues := array(select distinct q from unnest(mine || ''::text) as q);
  -- Look before locking anything: an empty poll writes nothing.
  if not baton_private.claimable_exists(me, mine, queues) then
    return;
  end if;
  wanted := least(p_limit, baton_private.free_capacity(me));
  if wanted < 1 then
    return;
  end if;
  ids := baton_private.lock_claimable(me, mine, queues, p_capabilities, wanted);
  perform baton_private.mark_claimed(ids, me, lease, p_start);
  return query
    select * from public.task_handoffs where id = any (ids) order by priority desc, created_at;
end
$$;

revoke all on function public.claim_next_tasks from public, anon;
grant execute on function public.claim_next_tasks to authenticated;

comment on function public.claim_next_tasks is 'Claims up to p_limit tasks (never beyond the agent''s free capacity): addressed ones first, then broadcasts it can do, highest priority then oldest. Concurrent callers never get the same task.';

create function public.start_task(p_task_id uuid, p_claim_token uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  if t.status <> 'claimed' then
    raise exception 'task % is %; only a claimed task can be started', t.id, t.status
      using errcode = 'BT001', hint = 'It is already under way.';
  end if;
  update public.task_handoffs set status = 'in_progress' where id = t.id returning * into t;
  return t;
end
$$;

revoke all on function public.start_task from public, anon;
grant execute on function public.start_task to authenticated;

comment on function public.start_task is 'The holder starts a claimed task.';

create function public.release_task(p_task_id uuid, p_claim_token uuid, p_reason text default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; only a claimed or running task can be released', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer, then release it.';
  end if;
  perform baton_private.set_note(coalesce(p_reason, 'released by the holder'));
  -- Handing a task back is not a failed attempt.
  update public.task_handoffs set status = 'pending', attempts = greatest(attempts - 1, 0)
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;

revoke all on function public.release_task from public, anon;
grant execute on function public.release_task to authenticated;

comment on function public.release_task is 'The holder hands a task back to pending, for another agent or later; the attempt does not count.';

create function public.decline_task(p_task_id uuid, p_claim_token uuid, p_reason text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  reason text := left(p_reason, 2000);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  perform baton_private.require_text(p_reason, 'the reason for declining', 'Say what this agent lacks, e.g. no executor for task_type "development".');
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; only a claimed or running task can be declined', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer, then decline it.';
  end if;
  perform baton_private.set_note(format('declined by %s: %s', me, reason));
  update public.task_handoffs set status = 'pending', attempts = greatest(attempts - 1, 0), status_reason = reason
  where id = t.id returning * into t;
  if t.to_agent = me then
    perform baton_private.set_note(reason);
    update public.task_handoffs set status = 'rejected' where id = t.id returning * into t;
  else
    insert into public.task_declines (task_id, agent_id, reason) values (t.id, me, reason)
    on conflict (task_id, agent_id) do update set reason = excluded.reason, declined_at = now();
  end if;
  perform baton_private.set_note(null);
  return t;
end
$$;

revoke all on function public.decline_task from public, anon;
grant execute on function public.decline_task to authenticated;

comment on function public.decline_task is 'The holder hands back a task it cannot do, without counting an attempt: addressed to it, the task is rejected with the reason; a broadcast goes back to pending for another agent and is never offered to this one again.';

-- Sender and addressee --------------------------------------------------------------------------------
create function public.reject_task(p_task_id uuid, p_reason text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.to_agent is distinct from me then
    raise exception 'only the addressee can reject task %', t.id
      using errcode = 'BT003',
            hint = case when t.to_agent is null then 'A broadcast is not rejected by one agent; leave it for another.'
                        else format('It is addressed to "%s".', t.to_agent) end;
  end if;
  perform baton_private.require_text(p_reason, 'the reason for a rejection', 'Tell the sender why, in one line.');
  if t.status <> 'pending' then
    raise exception 'task % is %; only pending tasks can be rejected', t.id, t.status
      using errcode = 'BT001', hint = 'Release or fail a task you already claimed.';
  end if;
  perform baton_private.set_note(p_reason);
  update public.task_handoffs set status = 'rejected', status_reason = p_reason
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  return t;
end
$$;

revoke all on function public.reject_task from public, anon;
grant execute on function public.reject_task to authenticated;

comment on function public.reject_task is 'The addressee declines a pending task, with a reason.';

-- The one place a task is completed, alone (complete_task) or in a batch (report_outcomes): each task
-- of `ids` that `agent` holds under the claim token at the same position, in progress, with every
-- required output attached, becomes completed with its result (results[i] for ids[i]). A task that does
-- not qualify is left as it is; complete_task says why. Returns the ids completed (not the rows: a
-- batch of 1,000 would hold them all). The status is compared as text, so that no index of open tasks
-- can stand in for the primary key (see report_outcomes). Each task's own values are found by its
-- position in the arrays, not by joining them with the tasks: estimated at one row each side, that
-- join was a nested loop of 1,000 × 1,000.
create function baton_private.complete_held(agent text, ids uuid[], tokens uuid[], results jsonb[])
returns setof uuid
language plpgsql set search_path = ''
as $$
begin
  return query
    update public.task_handoffs t
    set status = 'completed', result = coalesce(results[array_position(ids, t.id)], '{"status": "success"}'),
        status_reason = null, problems = null
    where t.id = any (ids) and t.claimed_by = agent and t.claim_token = tokens[array_position(ids, t.id)]
      and t.status::text = 'in_progress'
      and not exists (select from jsonb_array_elements(t.expected_outputs) e
                      where coalesce((e ->> 'required')::boolean, true)
                        and not exists (select from public.task_artifacts x where x.task_id = t.id and x.name = e ->> 'name'))
    returning t.id;
end
$$;

create function public.complete_task(p_task_id uuid, p_claim_token uuid, p_result jsonb default '{"status": "success"}')
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  missing text;
begin
  if not exists (select from baton_private.complete_held(me, array[t.id], array[p_claim_token], array[p_result])) then
    -- Refused by the rule: say which part of it.
    perform baton_private.check_holder(t, me, p_claim_token);
    if t.status <> 'in_progress' then
      raise exception 'task % is %; only a task in progress can be completed', t.id, t.status
        using errcode = 'BT001',
              hint = case when t.status = 'claimed' then 'Start it first (baton start <task>).'
                          else 'Wait for the sender''s answer before completing it.' end;
    end if;
    select string_agg(e ->> 'name', ', ' order by e ->> 'name') into missing
    from jsonb_array_elements(t.expected_outputs) e
    where coalesce((e ->> 'required')::boolean, true)
      and not exists (select from public.task_artifacts a where a.task_id = t.id and a.name = e ->> 'name');
    raise exception 'task % is missing required outputs: %', t.id, missing
      using errcode = 'BT012', hint = 'Attach them first (baton complete <task> --artifact name=@file).';
  end if;
  select * into t from public.task_handoffs where id = t.id;
  if t.result ? 'handoff' then
    perform baton_private.create_follow_up(t, t.result -> 'handoff', me);
  end if;
  return t;
end
$$;

revoke all on function public.complete_task from public, anon;
grant execute on function public.complete_task to authenticated;

comment on function public.complete_task is 'The holder completes a task in progress with its result; the claim token must be current and every required expected output attached (else BT012). A result.handoff creates the follow-up task in the same transaction.';

create function public.fail_task(
  p_task_id uuid,
  p_claim_token uuid,
  p_error text,
  p_retry boolean default false,
  p_problems jsonb default null
) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  perform baton_private.require_text(p_error, 'the reason for a failure', 'Say what went wrong, in one line.');
  if t.status <> 'in_progress' then
    raise exception 'task % is %; only a task in progress can fail', t.id, t.status
      using errcode = 'BT001', hint = 'Release a claimed task instead (baton release <task>).';
  end if;
  if p_retry and t.attempts < t.max_attempts then
    perform baton_private.set_note(format('retry after attempt %s of %s: %s', t.attempts, t.max_attempts, p_error));
    update public.task_handoffs
    set status = 'pending', status_reason = p_error, problems = p_problems, not_before = now() + baton_private.retry_delay(t.attempts)
    where id = t.id returning * into t;
  else
    perform baton_private.set_note(case when p_retry then format('out of attempts (%s of %s): %s', t.attempts, t.max_attempts, p_error) else p_error end);
    update public.task_handoffs set status = 'failed', status_reason = p_error, problems = p_problems
    where id = t.id returning * into t;
  end if;
  perform baton_private.set_note(null);
  return t;
end
$$;

revoke all on function public.fail_task from public, anon;
grant execute on function public.fail_task to authenticated;

comment on function public.fail_task is 'The holder reports failure. With p_retry the task goes back to pending while attempts remain; otherwise it fails for good.';

-- Outcomes in a batch, each judged on its own (a refused one does not stop the others). Statements
-- that find held tasks by id test the status as text, which implies no index's predicate, so the
-- primary key is the only index that can serve them: comparing the status as an enum, the planner
-- (statistics taken while little was pending) read every open task through
-- task_handoffs_open_from_agent_idx instead, and a report of ten outcomes behind a backlog of 60,000
-- took 21 ms.
create function public.report_outcomes(p_outcomes jsonb)
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
    select coalesce(array_agg(raw_ids[array_position(ids, c.id)]), '{}') into plain
    from baton_private.complete_held(me, ids, tokens, results) as c (id);
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

revoke all on function public.report_outcomes from public, anon;
grant execute on function public.report_outcomes to authenticated;

comment on function public.report_outcomes is 'Completes or fails many held tasks in one call, each by the rules of complete_task and fail_task; a refused one comes back with its code, message and hint, and the others are not affected.';

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

revoke all on function public.report_and_claim from public, anon;
grant execute on function public.report_and_claim to authenticated;

comment on function public.report_and_claim is 'report_outcomes(p_outcomes), then claim_next_tasks for up to p_claim tasks (started), in one request: {outcomes: [as report_outcomes], claimed: [tasks], claim_error: {code, message, hint} or null}. What a daemon with free slots calls when it reports.';

-- While a task is under way: the holder reports progress and asks the sender questions; the sender
-- answers, or hands the task to another agent. Each exchange lands on the task and in its message thread.
create function public.report_progress(p_task_id uuid, p_message text, p_percent integer default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  -- Progress needs the holder, not the claim token: any process of the holding agent may report.
  perform baton_private.check_holder(t, me, t.claim_token);
  perform baton_private.require_text(p_message, 'a progress report', 'Say in one line what is done or happening.');
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; progress is reported on a claimed or running task', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer first.';
  end if;
  update public.task_handoffs
  set progress_message = p_message, progress_percent = p_percent, progress_at = now()
  where id = t.id returning * into t;
  insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
  values (me, t.from_agent, t.id, 'progress',
          jsonb_strip_nulls(jsonb_build_object('text', p_message, 'percent', p_percent)));
  return t;
end
$$;

revoke all on function public.report_progress from public, anon;
grant execute on function public.report_progress to authenticated;

comment on function public.report_progress is 'The holder reports progress: stored on the task and sent to the sender as a progress message.';

-- The caller must hold the task under the claim it presents.
create function baton_private.check_holder(t public.task_handoffs, agent text, p_claim_token uuid) returns void
language plpgsql stable set search_path = ''
as $$
begin
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    raise exception 'task % is already %', t.id, t.status
      using errcode = 'BT001', hint = 'A final task cannot change; hand off a new one if work remains.';
  end if;
  if t.claimed_by is distinct from agent then
    raise exception 'task % is %, and agent "%" does not hold it', t.id,
      case when t.claimed_by is null then t.status::text else format('held by "%s"', t.claimed_by) end, agent
      using errcode = 'BT003', hint = 'Only the agent holding a task can report on it; claim it first.';
  end if;
  if p_claim_token is distinct from t.claim_token then
    raise exception 'the claim presented for task % is no longer current', t.id
      using errcode = 'BT007',
            hint = 'The task was released or re-claimed since that claim; drop this outcome.';
  end if;
end
$$;

-- Claims read each queue from its front, whatever the statistics say.
--
-- A claim wants the first tasks of a queue by priority and age, and the indexes of claimable tasks
-- (task_handoffs_claimable_direct_idx and _capability_idx) hold each queue in that order. But with statistics taken while little was
-- pending (ANALYZE on a quiet queue, then a burst), the planner estimated one pending task and chose to
-- read every open task through another index and sort them: a claim of 10 from a queue of 3,000 read
-- 9,041 rows of task_handoffs (test/plans.test.ts), so a burst drained in quadratic time. On a stack
-- with a long history, a claim and completion cost 1.07-1.75 ms of Postgres per task instead of 0.86-0.93.
--
-- The statements that read the queues run with sorting disabled, so the only plans left without a
-- penalty are those that read an index in the queue's order and stop at the limit. They sit in two
-- helpers of their own, so that the setting does not reach the triggers the claim's UPDATE fires (whose
-- plans are kept for the session and shared with every other caller).

-- Whether anything is claimable now: a task addressed to the agent, or the front of one of its queues.
create function baton_private.claimable_exists(me text, mine text[], queues text[]) returns boolean
language plpgsql stable set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
begin
  return exists (
      select from (
        select from public.task_handoffs t
        where t.status = 'pending' and t.to_agent = me and (t.not_before is null or t.not_before <= now())
        order by t.priority desc, t.created_at
        limit 1) found)
    or exists (
      -- A lateral LIMIT 1 per queue, each reading its own part of the index.
      select from unnest(queues) as q (capability)
      cross join lateral (
        select from public.task_handoffs t
        where t.status = 'pending' and t.to_agent is null and coalesce(t.required_capabilities[1], '') = q.capability
          and t.required_capabilities <@ mine and (t.not_before is null or t.not_before <= now())
          and not exists (select from public.task_declines d where d.task_id = t.id and d.agent_id = me)
        order by t.priority desc, t.created_at
        limit 1) found);
end
$$;

revoke all on function baton_private.claimable_exists(text, text[], text[]) from public, anon, authenticated;

-- Locks up to `wanted` claimable tasks, skipping those others hold locked: tasks addressed to the agent
-- first, then broadcasts it can do, each by priority, then age. Returns their ids.
create function baton_private.lock_claimable(me text, mine text[], queues text[], p_capabilities text[], wanted integer)
returns uuid[]
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
declare
  ids uuid[];
  more uuid[];
begin
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
    -- Each capability's front, locked with SKIP LOCKED, merged by priority and age (this sort, of at
    -- most `wanted` rows per queue, is the one every plan has).
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
  return ids;
end
$$;

revoke all on function baton_private.lock_claimable(text, text[], text[], text[], integer) from public, anon, authenticated;

-- The one place a claim is made: the caller has locked the rows and checked the agent may take them.
-- A claim that starts at once goes straight to in_progress: one change, one event, one trigger run.
create function baton_private.mark_claimed(ids uuid[], agent text, lease interval, start boolean) returns void
language plpgsql set search_path = ''
as $$
declare
  held interval := coalesce(lease, (baton_private.settings()).default_lease);
begin
  update public.task_handoffs
  set status = case when start then 'in_progress'::public.task_status else 'claimed' end,
      claimed_by = agent, claim_token = gen_random_uuid(), attempts = attempts + 1, not_before = null,
      claim_lease = coalesce(lease, make_interval(secs => lease_seconds), held),
      lease_expires_at = now() + coalesce(lease, make_interval(secs => lease_seconds), held)
  where id = any (ids);
end
$$;

-- How many more tasks the agent may hold: max_concurrent less what it holds. The count reads the
-- agent's own held tasks, at most `cap` of them. (A
-- pending task has no holder, task_handoffs_holder_matches_status, so these are the held ones; naming
-- all four open statuses lets the index answer alone.)
create function baton_private.free_capacity(agent text) returns integer
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

-- A lease asked for at claim time; null leaves it to the task's lease_seconds or the default.
create function baton_private.lease_for(p_lease_seconds integer) returns interval
language plpgsql stable set search_path = ''
as $$
begin
  if p_lease_seconds is null then
    return null;
  end if;
  perform baton_private.check_lease(p_lease_seconds);
  return make_interval(secs => p_lease_seconds);
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

grant execute on function baton_private.check_lease(integer) to anon, authenticated, service_role;

-- The one rule for how long a claim holds: while its lease runs, and while its holder keeps being heard
-- from within two of its declared wake-ups, or within the claim's lease if that is longer. A bot on a
-- 15-minute cron loses a claim once it misses two wake-ups (30 minutes), not to a 5-minute lease.
create function baton_private.claim_expires_at(t public.task_handoffs, holder public.agents) returns timestamptz
language sql stable security definer set search_path = ''
as $$
  select greatest(
    t.lease_expires_at,
    holder.last_heartbeat
      + greatest(coalesce(t.claim_lease, (baton_private.settings()).default_lease), 2 * coalesce(holder.poll_interval, interval '0'))
  )
$$;

revoke all on function baton_private.claim_expires_at(public.task_handoffs, public.agents) from public, anon, authenticated;

-- Why a lapsed claim lapsed, in words a sender can act on.
create function baton_private.lapse_reason(t public.task_handoffs, holder public.agents) returns text
language sql stable set search_path = ''
as $$
  select format('holder %s unheard since %s (lease %s%s)',
    t.claimed_by,
    coalesce(to_char(holder.last_heartbeat at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'the claim'),
    coalesce(t.claim_lease, (baton_private.settings()).default_lease),
    case when holder.poll_interval is null then '' else format(', wakes every %s', holder.poll_interval) end)
$$;

revoke all on function baton_private.lapse_reason(public.task_handoffs, public.agents) from public, anon, authenticated;

-- Exponential backoff with jitter: base * 2^(attempt - 1), capped, then scaled by 0.75 to 1.25.
create function baton_private.retry_delay(attempt integer) returns interval
language sql volatile set search_path = ''
as $$
  select least(s.retry_base_delay * power(2, greatest(attempt - 1, 0)), s.retry_max_delay) * (0.75 + random() * 0.5)
  from public.baton_settings s where s.id
$$;

-- Inspection views for Studio --------------------------------------------------------------------------
-- Each reads through the caller's row-level security: an operator (service role) sees everything, an
-- agent only the tasks it may see.
create view public.task_queue with (security_invoker = true) as
  select t.status, coalesce(c.capability, case when t.to_agent is not null then '(addressed)' else '(anyone)' end) as capability,
         count(*)::integer as tasks,
         (count(*) filter (where t.waiting_on > 0))::integer as waiting,
         (count(*) filter (where t.not_before > now() and t.waiting_on = 0))::integer as scheduled,
         min(t.created_at) as oldest_created_at,
         now() - min(t.created_at) as oldest_age
  from public.task_handoffs t
  left join lateral unnest(case when t.to_agent is null and t.required_capabilities <> '{}' then t.required_capabilities end) as c (capability) on true
  where t.status in ('pending', 'claimed', 'in_progress', 'input_required')
  group by t.status, 2;

revoke all on public.task_queue from anon, authenticated;
grant select on public.task_queue to authenticated, service_role;

comment on view public.task_queue is 'Open tasks by status and required capability: how many, how many wait on dependencies or a later time, and how old the oldest is.';
comment on column public.task_queue.status is 'The tasks'' status (open statuses only).';
comment on column public.task_queue.capability is 'A capability the tasks require (a task requiring two counts under both); (addressed) for tasks addressed to one agent, (anyone) for offers that need none.';
comment on column public.task_queue.tasks is 'How many tasks.';
comment on column public.task_queue.waiting is 'Of those, how many wait for tasks they depend on.';
comment on column public.task_queue.scheduled is 'Of those, how many are not claimable yet: scheduled for later (run_at) or backing off after a failure.';
comment on column public.task_queue.oldest_created_at is 'When the oldest of them was handed off.';
comment on column public.task_queue.oldest_age is 'How long ago that was.';

create view public.stuck_claims with (security_invoker = true) as
  select t.id, t.title, t.status, t.claimed_by, a.last_heartbeat as holder_last_heartbeat,
         t.lease_expires_at, now() - t.lease_expires_at as overdue_by, t.attempts, t.max_attempts, t.from_agent
  from public.task_handoffs t left join public.agents a on a.id = t.claimed_by
  where t.status in ('claimed', 'in_progress', 'input_required') and t.lease_expires_at < now();

revoke all on public.stuck_claims from anon, authenticated;
grant select on public.stuck_claims to authenticated, service_role;

comment on view public.stuck_claims is 'Claims whose lease has lapsed: the sweep re-queues them once their holder is also unheard for two of its wake-ups; until then they wait here.';
comment on column public.stuck_claims.id is 'The task.';
comment on column public.stuck_claims.title is 'Its title.';
comment on column public.stuck_claims.status is 'Its status: claimed, in_progress or input_required.';
comment on column public.stuck_claims.claimed_by is 'The agent holding it.';
comment on column public.stuck_claims.holder_last_heartbeat is 'When that agent was last heard from.';
comment on column public.stuck_claims.lease_expires_at is 'When its lease lapsed.';
comment on column public.stuck_claims.overdue_by is 'How long ago that was.';
comment on column public.stuck_claims.attempts is 'Attempts made so far.';
comment on column public.stuck_claims.max_attempts is 'Attempts allowed before it fails for good.';
comment on column public.stuck_claims.from_agent is 'Who sent it.';

create policy "Agents can see their own declines and those of tasks they sent" on public.task_declines
  for select to authenticated
  using (
    agent_id = (select baton_private.current_agent_id())
    or exists (select from public.task_handoffs t where t.id = task_id and t.from_agent = (select baton_private.current_agent_id()))
  );
