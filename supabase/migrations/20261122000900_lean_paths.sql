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

-- Each row a hand-off inserts passed through a dozen function calls that had nothing to check (an empty
-- list of outputs, no lease, an empty payload): each call costs more than the check. They are skipped
-- where the value says there is nothing to check, and the slug test is inlined into its callers.
create or replace function baton_private.is_slug(value text) returns boolean
language sql immutable
as $$ select value operator(pg_catalog.~) '^[a-z0-9][a-z0-9._:-]{0,62}$' $$;

create or replace function baton_private.tg_task_handoffs__validate() returns trigger
language plpgsql set search_path = ''
as $$
declare
  fresh boolean := tg_op = 'INSERT';
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
    if octet_length(new.result::text) > 262144 then
      raise exception 'the result is % bytes; the limit is 256 KiB', octet_length(new.result::text)
        using errcode = 'BT005', hint = 'Store large outputs elsewhere and put a link in the result.';
    end if;
  end if;
  if (fresh or new.required_capabilities is distinct from old.required_capabilities)
     and (cardinality(new.required_capabilities) > 32
          or exists (select from unnest(new.required_capabilities) c where c is null or not baton_private.is_slug(c))) then
    raise exception 'invalid required capabilities'
      using errcode = 'BT005',
            hint = 'Give at most 32 capabilities, each 1 to 63 lower-case letters, digits, ., :, - or _.';
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

create or replace function baton_private.tg_task_handoffs__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if (tg_op = 'INSERT' or new.payload is distinct from old.payload) and new.payload <> '{}' then
    perform baton_private.check_json_shape(new.payload, 'the payload');
  end if;
  if new.result is not null and (tg_op = 'INSERT' or new.result is distinct from old.result) then
    perform baton_private.check_json_shape(new.result, 'the result');
  end if;
  if new.problems is not null and (tg_op = 'INSERT' or new.problems is distinct from old.problems) then
    if octet_length(new.problems::text) > 65536 or jsonb_typeof(new.problems) = 'array' and jsonb_array_length(new.problems) > 100 then
      raise exception 'the problems reported are larger than 64 KiB or 100 entries'
        using errcode = 'BT005', hint = 'Report the first problems, each {path, message} in a line.';
    end if;
    perform baton_private.check_json_shape(new.problems, 'the problems');
  end if;
  if tg_op = 'INSERT' then
    if new.expected_outputs <> '[]' then
      perform baton_private.check_json_shape(new.expected_outputs, 'the expected outputs');
    end if;
    if new.input_artifacts <> '[]' then
      perform baton_private.check_json_shape(new.input_artifacts, 'the input artifacts');
    end if;
  end if;
  return new;
end
$$;

-- An update that changes none of the columns the validation looks at (a claim, a start, a renewed
-- lease) does not run it.
drop trigger validate on public.task_handoffs;
create trigger validate before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__validate();
create trigger validate_on_change before update on public.task_handoffs
  for each row
  when ((new.title, new.description, new.payload, new.expected_outputs, new.result, new.required_capabilities,
         new.max_attempts, new.lease_seconds, new.progress_percent, new.progress_message, new.status_reason)
        is distinct from
        (old.title, old.description, old.payload, old.expected_outputs, old.result, old.required_capabilities,
         old.max_attempts, old.lease_seconds, old.progress_percent, old.progress_message, old.status_reason))
  execute function baton_private.tg_task_handoffs__validate();

-- A batch counts its quota once; its rows do not need the trigger at all.
drop trigger quota on public.task_handoffs;
create trigger quota before insert on public.task_handoffs
  for each row when (not baton_private.in_batch())
  execute function baton_private.tg_task_handoffs__quota();

-- The batches: outcomes no longer touch the senders' counters; hand-offs recount when they would pass
-- the quota; and the plain items of each are written in one statement.
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
  quick jsonb := '{}';
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
  -- Plain hand-offs (no parent, no idempotency key, no inputs, to an agent that exists or to whoever
  -- holds the capabilities) are one insert when the whole batch fits the quota: handoff_task would only
  -- insert them, and the table's triggers judge each row as they do for it. If that insert is refused,
  -- every item goes through handoff_task, which is the rule, one by one.
  if jsonb_array_length(p_tasks) <= allowance then
    begin
      with asked as materialized (
        select gen_random_uuid() as id, (a.n - 1)::integer as n, a.item
        from jsonb_array_elements(p_tasks) with ordinality as a (item, n)
        where jsonb_typeof(a.item) = 'object'
          and coalesce(a.item ->> 'parent_task_id', a.item ->> 'idempotency_key') is null
          and coalesce(a.item -> 'input_artifacts', '[]') = '[]'
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
      select coalesce(jsonb_object_agg(q.n::text, q.id), '{}') into quick
      from asked q join inserted on inserted.id = q.id;
    exception when others then
      quick := '{}';
    end;
  end if;
  for item in select value from jsonb_array_elements(p_tasks) loop
    if quick ? i::text then
      return query select i, (quick ->> i::text)::uuid, null::text, null::text, null::text;
      count_made := count_made + 1;
    elsif count_made >= allowance then
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
