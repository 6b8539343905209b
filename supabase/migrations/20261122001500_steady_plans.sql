-- Claims and reports whose plans do not change with the numbers in them.
--
-- * claim_next_tasks runs on its generic plans. PostgreSQL chose custom plans for some of its
--   statements and planned them again on every call; the generic plans read the same indexes (each
--   queue's own, the addressed tasks' own, task_handoffs_pkey for the claimed ids). Measured without
--   HTTP, 10 tasks per claim: 1.15-1.22 → 0.96-1.07 ms of Postgres CPU per claim and completion.

alter function public.claim_next_tasks(integer, text[], integer, boolean) set plan_cache_mode = force_generic_plan;

-- report_outcomes joined the outcomes with the tasks they name. Both sides were estimated at one row,
-- so the plan was a nested loop that compared every outcome with every held task: 1,000 outcomes in one
-- call took 0.9 s, 1,000 comparisons each. It now finds the tasks by primary key (id = any) and each
-- task's token and result by its position in the arrays of outcomes. Answers are unchanged.
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
        and t.status = 'in_progress'
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

