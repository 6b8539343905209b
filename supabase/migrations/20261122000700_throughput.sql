-- Throughput: claiming and starting is one status change; history and result messages are written once
-- per statement; a payload is validated when it changes, not on every status change; and outcomes and
-- hand-offs travel in batches, each task judged on its own.

insert into public.task_status_transitions (from_status, to_status, meaning)
values ('pending', 'in_progress', 'an agent claimed it and started at once');

-- The one place a claim is made: the caller has locked the rows and checked the agent may take them.
-- A claim that starts at once goes straight to in_progress: one change, one event, one trigger run.
create or replace function baton_private.mark_claimed(ids uuid[], agent text, lease interval, start boolean) returns void
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

-- As before, with pending -> in_progress stamping the claim time too.
create or replace function baton_private.tg_task_handoffs__transition() returns trigger
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
        if old.status = 'pending' then
          new.claimed_at := now();
        end if;
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

-- As before, but each field is checked when it is set or changed, not on every status change.
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
  if fresh or new.expected_outputs is distinct from old.expected_outputs then
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
  if fresh or new.lease_seconds is distinct from old.lease_seconds then
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

-- History, once per statement: a batch of claims writes its events in one insert.
drop trigger record_event on public.task_handoffs;
drop function baton_private.tg_task_handoffs__record_event();

create function baton_private.event_actor() returns text
language sql stable set search_path = ''
as $$
  select coalesce(nullif(current_setting('baton.actor', true), ''), baton_private.current_agent_id(), nullif(auth.role(), ''), session_user)
$$;

create function baton_private.tg_task_handoffs__record_created() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  insert into public.task_events (task_id, actor, from_status, to_status, note)
  select n.id, baton_private.event_actor(), null, n.status, nullif(current_setting('baton.note', true), '')
  from created n;
  return null;
end
$$;
create trigger record_created after insert on public.task_handoffs
  referencing new table as created
  for each statement execute function baton_private.tg_task_handoffs__record_created();

create function baton_private.tg_task_handoffs__record_changed() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  insert into public.task_events (task_id, actor, from_status, to_status, note)
  select n.id, baton_private.event_actor(), o.status, n.status, nullif(current_setting('baton.note', true), '')
  from changed n join previous o on o.id = n.id
  where n.status is distinct from o.status;
  return null;
end
$$;
create trigger record_changed after update on public.task_handoffs
  referencing new table as changed old table as previous
  for each statement execute function baton_private.tg_task_handoffs__record_changed();

-- The sender hears of every outcome it did not cause itself; once per statement as well.
drop trigger notify_sender on public.task_handoffs;
create or replace function baton_private.tg_task_handoffs__notify_sender() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
  select coalesce(n.claimed_by, n.to_agent, n.from_agent), n.from_agent, n.id, 'result',
         jsonb_strip_nulls(jsonb_build_object('status', n.status, 'result', n.result, 'reason', n.status_reason))
  from changed n join previous o on o.id = n.id
  where n.status in ('completed', 'failed', 'rejected', 'cancelled') and n.status is distinct from o.status
    and baton_private.event_actor() is distinct from n.from_agent;
  return null;
end
$$;
create trigger notify_sender after update on public.task_handoffs
  referencing new table as changed old table as previous
  for each statement execute function baton_private.tg_task_handoffs__notify_sender();

-- Batches -------------------------------------------------------------------------------------------

-- Many outcomes in one request: each {task_id, claim_token, result} completes a task, each {task_id,
-- claim_token, error, retry?, problems?} fails one. Every task is judged on its own, by the same
-- functions and rules as one at a time; a refused one is reported with its code and the rest go on.
create function public.report_outcomes(p_outcomes jsonb)
returns table (task_id uuid, status public.task_status, code text, message text, hint text)
language plpgsql security definer set search_path = ''
as $$
declare
  outcome jsonb;
  done public.task_handoffs;
  err_hint text;
  closed uuid[] := '{}';
begin
  perform baton_private.require_agent();
  if jsonb_typeof(p_outcomes) <> 'array' or jsonb_array_length(p_outcomes) > 1000 then
    raise exception 'outcomes must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"task_id": "…", "claim_token": "…", "result": {"status": "success"}}, …].';
  end if;
  perform set_config('baton.batch', 'on', true);
  for outcome in select value from jsonb_array_elements(p_outcomes) loop
    begin
      if outcome ? 'error' then
        done := public.fail_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid, outcome ->> 'error',
                                 coalesce((outcome ->> 'retry')::boolean, false), outcome -> 'problems');
      else
        done := public.complete_task((outcome ->> 'task_id')::uuid, (outcome ->> 'claim_token')::uuid,
                                     coalesce(outcome -> 'result', '{"status": "success"}'));
      end if;
      if done.status in ('completed', 'failed') then
        closed := closed || done.id;
      end if;
      return query select done.id, done.status, null::text, null::text, null::text;
    exception when others then
      get stacked diagnostics err_hint = pg_exception_hint;
      return query select (case when outcome ->> 'task_id' ~ '^[0-9a-f-]{36}$' then (outcome ->> 'task_id')::uuid end),
                          null::public.task_status, sqlstate::text, sqlerrm, nullif(err_hint, '');
    end;
  end loop;
  perform set_config('baton.batch', '', true);
  -- The tasks that became final no longer count as open for their senders: one update per sender.
  update public.agent_usage u set open_tasks = greatest(u.open_tasks - c.n, 0)
  from (select t.from_agent, count(*)::integer as n from public.task_handoffs t where t.id = any (closed) group by t.from_agent) c
  where u.agent_id = c.from_agent;
end
$$;
comment on function public.report_outcomes is 'Completes or fails many held tasks in one call, each by the rules of complete_task and fail_task; a refused one comes back with its code, message and hint, and the others are not affected.';

-- Many hand-offs in one request, each as handoff_task would make it (same arguments without the p_).
create function public.handoff_tasks(p_tasks jsonb)
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
comment on function public.handoff_tasks is 'Hands off many tasks in one call, each as handoff_task would (its arguments without the p_ prefix); a refused one comes back with its index, code, message and hint, and the others are made.';

revoke all on function public.report_outcomes, public.handoff_tasks from public, anon;
grant execute on function public.report_outcomes, public.handoff_tasks to authenticated;
revoke execute on function baton_private.event_actor(), baton_private.in_batch(), baton_private.tg_task_handoffs__record_created(),
  baton_private.tg_task_handoffs__record_changed() from public, anon, authenticated;
