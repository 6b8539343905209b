-- Leaner hot paths, measured with the throughput bench:
-- * A sender's open-task counter was decremented whenever one of its tasks became final, so every agent
--   completing work for the same sender queued on that sender's one counter row: completions were
--   serialized across agents. The counter is now an upper bound (every hand-off adds one, nothing
--   subtracts) and is recounted from the tasks themselves only when it reaches the quota.
-- * The JSON shape check runs only when a JSON column changes, and skips values too small to break a
--   limit without walking them.

-- The recount reads only open tasks, however much history a sender has.
create index task_handoffs_open_from_agent_idx on public.task_handoffs (from_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required');

drop trigger close_usage on public.task_handoffs;
drop function baton_private.tg_task_handoffs__close_usage();

comment on column public.agent_usage.open_tasks is 'An upper bound on how many tasks this agent sent that are not final: each hand-off adds one, and it is recounted from the tasks when it reaches open_tasks_per_sender.';

-- Sets the agent's open-task counter to what is really open, plus `adding` tasks about to be stored.
create function baton_private.recount_open_tasks(agent text, adding integer) returns integer
language sql security definer set search_path = ''
as $$
  update public.agent_usage u
  set open_tasks = adding + (select count(*) from public.task_handoffs t
                             where t.from_agent = agent and t.status in ('pending', 'claimed', 'in_progress', 'input_required'))
  where u.agent_id = agent
  returning u.open_tasks
$$;
revoke all on function baton_private.recount_open_tasks(text, integer) from public, anon, authenticated;

create or replace function baton_private.tg_task_handoffs__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  open_now integer;
begin
  if baton_private.in_batch() then
    return new;
  end if;
  insert into public.agent_usage as u (agent_id, open_tasks) values (new.from_agent, 1)
  on conflict (agent_id) do update set open_tasks = u.open_tasks + 1
  returning u.open_tasks into open_now;
  if baton_private.current_agent_id() is null then
    return new;
  end if;
  if open_now > settings.open_tasks_per_sender then
    -- This task is not stored yet: it counts as the one being added.
    open_now := baton_private.recount_open_tasks(new.from_agent, 1);
  end if;
  if open_now > settings.open_tasks_per_sender then
    raise exception 'agent "%" already has % open tasks, its quota', new.from_agent, settings.open_tasks_per_sender
      using errcode = 'BT013',
            hint = 'Wait for some to finish, or cancel those no longer needed; an operator can raise baton_settings.open_tasks_per_sender.';
  end if;
  perform baton_private.use_quota(new.from_agent, 'handoffs', settings.handoffs_per_minute, 'handoffs_per_minute');
  return new;
end
$$;

-- Status changes (claims, starts, leases) leave the JSON alone: they no longer run its check.
drop trigger limit_json on public.task_handoffs;
create trigger limit_json before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__limit_json();
create trigger limit_json_on_change before update on public.task_handoffs
  for each row
  when (new.payload is distinct from old.payload or new.result is distinct from old.result
        or new.problems is distinct from old.problems)
  execute function baton_private.tg_task_handoffs__limit_json();

-- A JSON value nests one level deeper for at least 8 more bytes (a container's header and its entry in
-- its parent), and holds one more item for at least 4 (the entry): one smaller than both limits allow
-- cannot break either, and is not walked. A compressed value's stored size says nothing: it is walked.
create or replace function baton_private.check_json_shape(value jsonb, what text) returns void
language plpgsql stable
as $$
declare
  settings public.baton_settings;
  widest integer;
begin
  if value is null or pg_catalog.jsonb_typeof(value) not in ('object', 'array') or value in ('{}'::jsonb, '[]'::jsonb) then
    return;
  end if;
  settings := baton_private.settings();
  if pg_catalog.pg_column_compression(value) is null
     and pg_catalog.pg_column_size(value) < least(8 * settings.max_json_depth, 4 * settings.max_json_keys) then
    return;
  end if;
  if pg_catalog.jsonb_path_exists(value, pg_catalog.format('strict $.**{%s to last}', settings.max_json_depth)::jsonpath) then
    raise exception '% nests deeper than % levels', what, settings.max_json_depth
      using errcode = 'BT005', hint = 'Flatten the structure; an operator can raise baton_settings.max_json_depth.';
  end if;
  select max(case pg_catalog.jsonb_typeof(node) when 'object' then (select count(*) from pg_catalog.jsonb_object_keys(node))
                                                when 'array' then pg_catalog.jsonb_array_length(node) end)
  into widest
  from pg_catalog.jsonb_path_query(value, 'strict $.**') as node
  where pg_catalog.jsonb_typeof(node) in ('object', 'array');
  if widest > settings.max_json_keys then
    raise exception '% has an object or array of % entries; the limit is %', what, widest, settings.max_json_keys
      using errcode = 'BT005', hint = 'Split it up or link to it; an operator can raise baton_settings.max_json_keys.';
  end if;
end
$$;

-- The batches: outcomes no longer touch the senders' counters; hand-offs recount when they would pass
-- the quota.
-- Plain completions (the holder, its current token, in progress, every required output attached, no
-- follow-up) are made in one statement, so history and result messages are written once for the batch.
-- That statement only picks out the completions complete_task would make unchanged; everything else,
-- and the whole batch if that statement is refused, goes through complete_task and fail_task one by one
-- as before, which are the rule. Answers come back in the order of the outcomes.
create or replace function public.report_outcomes(p_outcomes jsonb)
returns table (task_id uuid, status public.task_status, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  outcome jsonb;
  done public.task_handoffs;
  err_hint text;
  plain text[] := '{}';
begin
  if jsonb_typeof(p_outcomes) <> 'array' or jsonb_array_length(p_outcomes) > 1000 then
    raise exception 'outcomes must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"task_id": "…", "claim_token": "…", "result": {"status": "success"}}, …].';
  end if;
  perform set_config('baton.batch', 'on', true);
  begin
    with asked as (
      select o ->> 'task_id' as raw_id, o ->> 'claim_token' as raw_token, coalesce(o -> 'result', '{"status": "success"}') as result
      from jsonb_array_elements(p_outcomes) o
      where jsonb_typeof(o) = 'object' and not o ? 'error'
    ), once as materialized (
      select a.raw_id::uuid as id, a.raw_token::uuid as token, a.raw_id, a.result
      from asked a
      where a.raw_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        and a.raw_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        and jsonb_typeof(a.result) = 'object' and not a.result ? 'handoff'
        and (select count(*) from asked b where b.raw_id = a.raw_id) = 1
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
  for outcome in select value from jsonb_array_elements(p_outcomes) loop
    if not outcome ? 'error' and outcome ->> 'task_id' = any (plain) then
      return query select (outcome ->> 'task_id')::uuid, 'completed'::public.task_status, null::text, null::text, null::text;
      continue;
    end if;
    begin
      if outcome ? 'error' then
        done := public.fail_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid, outcome ->> 'error',
                                 coalesce((outcome ->> 'retry')::boolean, false), outcome -> 'problems');
      else
        done := public.complete_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid,
                                     coalesce(outcome -> 'result', '{"status": "success"}'));
      end if;
      return query select done.id, done.status, null::text, null::text, null::text;
    exception when others then
      get stacked diagnostics err_hint = pg_exception_hint;
      return query select (case when outcome ->> 'task_id' ~ '^[0-9a-f-]{36}$' then (outcome ->> 'task_id')::uuid end),
                          null::public.task_status, sqlstate::text, sqlerrm, nullif(err_hint, '');
    end;
  end loop;
  perform set_config('baton.batch', '', true);
end
$$;

create or replace function public.handoff_tasks(p_tasks jsonb)
returns table (index integer, task_id uuid, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  settings public.baton_settings := baton_private.settings();
  usage public.agent_usage;
  item jsonb;
  i integer := 0;
  made public.task_handoffs;
  count_made integer := 0;
  allowance integer;
  err_hint text;
begin
  if jsonb_typeof(p_tasks) <> 'array' or jsonb_array_length(p_tasks) > 1000 then
    raise exception 'tasks must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"title": "…", "to_agent": "coder", "payload": {}}, …].';
  end if;
  -- The quotas for the whole batch, counted once: what is left of this minute's hand-offs and of the
  -- open tasks allowed.
  insert into public.agent_usage as u (agent_id) values (me) on conflict (agent_id) do nothing;
  select * into usage from public.agent_usage u where u.agent_id = me for update;
  if usage.open_tasks + jsonb_array_length(p_tasks) > settings.open_tasks_per_sender then
    usage.open_tasks := baton_private.recount_open_tasks(me, 0);
  end if;
  allowance := least(
    settings.handoffs_per_minute - case when usage.minute = date_trunc('minute', now()) then usage.handoffs else 0 end,
    settings.open_tasks_per_sender - usage.open_tasks);
  perform set_config('baton.batch', 'on', true);
  for item in select value from jsonb_array_elements(p_tasks) loop
    if count_made >= allowance then
      return query select i, null::uuid, 'BT013'::text,
        format('agent "%s" reached its quota of hand-offs per minute or of open tasks', me),
        format('Try again in %s s; an operator can raise baton_settings.handoffs_per_minute or open_tasks_per_sender.',
               greatest(ceil(extract(epoch from date_trunc('minute', now()) + interval '1 minute' - now())), 1));
    else
      begin
        made := public.handoff_task(
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
          p_input_artifacts => coalesce(item -> 'input_artifacts', '[]'));
        if made.created_at = now() then
          count_made := count_made + 1;
        end if;
        return query select i, made.id, null::text, null::text, null::text;
      exception when others then
        get stacked diagnostics err_hint = pg_exception_hint;
        return query select i, null::uuid, sqlstate::text, sqlerrm, nullif(err_hint, '');
      end;
    end if;
    i := i + 1;
  end loop;
  perform set_config('baton.batch', '', true);
  update public.agent_usage u
  set minute = date_trunc('minute', now()),
      handoffs = case when u.minute = date_trunc('minute', now()) then u.handoffs else 0 end + count_made,
      open_tasks = u.open_tasks + count_made
  where u.agent_id = me;
end
$$;
