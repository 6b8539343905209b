-- Work that waits on work: dependencies (and the fan-out and fan-in built on them), tasks that run
-- later or on a schedule, dead letters that can be retried, and retention. The database enforces all
-- of it: a task that waits is not claimable, a failed dependency cancels what waits on it, a recurring
-- hand-off makes at most one task per slot however many daemons sweep, and retention never removes an
-- open task or anything an open task still needs.

-- Dependencies --------------------------------------------------------------------------------------

alter table public.task_handoffs
  add column depends_on uuid[] not null default '{}',
  add column dependency_mode text not null default 'all' check (dependency_mode in ('all', 'any')),
  add column on_dependency_failure text not null default 'cancel' check (on_dependency_failure in ('cancel', 'run')),
  add column waiting_on integer not null default 0 check (waiting_on >= 0),
  add column run_at timestamptz,
  add column retry_of uuid references public.task_handoffs (id) on delete set null;
comment on column public.task_handoffs.depends_on is 'Tasks this one waits for: it is not claimable until they complete (all of them, or the first one with dependency_mode any). Their results and artifacts are its inputs. Set at hand-off, never changed.';
comment on column public.task_handoffs.dependency_mode is 'all: wait for every task in depends_on to complete; any: the first to complete releases this task (a "first success wins" join) and the others are cancelled.';
comment on column public.task_handoffs.on_dependency_failure is 'cancel: a dependency that fails (or is cancelled or rejected) cancels this task, with the reason; run: it runs anyway once the others are done.';
comment on column public.task_handoffs.waiting_on is 'How many of depends_on are still unresolved; while above 0 the task is pending but not claimable (not_before is infinity).';
comment on column public.task_handoffs.run_at is 'Not claimable before this time (a scheduled task); once its dependencies are done it waits for this too.';
comment on column public.task_handoffs.retry_of is 'The failed task this one is a new attempt of (baton retry).';

create index task_handoffs_depends_on_idx on public.task_handoffs using gin (depends_on) where depends_on <> '{}';
create index task_handoffs_retry_of_idx on public.task_handoffs (retry_of) where retry_of is not null;

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
create trigger wait_on_dependencies before insert on public.task_handoffs
  for each row when (new.depends_on <> '{}' or new.run_at is not null) execute function baton_private.tg_task_handoffs__wait_on_dependencies();

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
create trigger keep_dependencies before update on public.task_handoffs
  for each row when (new.depends_on is distinct from old.depends_on or new.dependency_mode is distinct from old.dependency_mode
                     or new.on_dependency_failure is distinct from old.on_dependency_failure or new.retry_of is distinct from old.retry_of)
  execute function baton_private.tg_task_handoffs__keep_dependencies();

-- Makes a waiting task claimable (now, or at its run_at) and says so on the push channel.
create function baton_private.release_waiting(d public.task_handoffs) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  released public.task_handoffs;
begin
  update public.task_handoffs set waiting_on = 0, not_before = case when run_at > now() then run_at end
  where id = d.id returning * into released;
  perform baton_private.announce_changes(
    jsonb_build_array(jsonb_build_object('id', released.id, 'status', released.status, 'to_agent', released.to_agent,
                                         'from_agent', released.from_agent, 'required_capabilities', released.required_capabilities,
                                         'not_before', released.not_before)),
    '[]');
end
$$;

-- When a task ends, what waits on it moves: released, counted down, or cancelled with the reason. A
-- cancelled dependent ends too, so the cascade follows the whole graph.
create function baton_private.tg_task_handoffs__release_dependents() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  d public.task_handoffs;
  why text;
begin
  for d in
    select * from public.task_handoffs t
    where t.depends_on @> array[new.id] and t.depends_on <> '{}' and t.status = 'pending' and t.waiting_on > 0
    order by t.id
    for update
  loop
    if new.status = 'completed' then
      if d.dependency_mode = 'any' then
        perform baton_private.release_waiting(d);
        -- First success wins: the others are no longer needed.
        perform baton_private.set_note(format('task %s finished first; %s needed only one', new.id, d.id));
        update public.task_handoffs o
        set status = 'cancelled', status_reason = format('not needed: %s (%s) finished first for %s', new.id, new.title, d.id)
        where o.id = any (d.depends_on) and o.id <> new.id and o.status in ('pending', 'claimed', 'in_progress', 'input_required');
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
                    new.id, new.title, new.status) || coalesce(': ' || new.status_reason, '');
      perform baton_private.set_note(why);
      update public.task_handoffs set status = 'cancelled', status_reason = left(why, 2000), waiting_on = 0, not_before = null
      where id = d.id;
      perform baton_private.set_note(null);
    end if;
  end loop;
  return null;
end
$$;
create trigger release_dependents after update of status on public.task_handoffs
  for each row when (new.status in ('completed', 'failed', 'rejected', 'cancelled') and old.status is distinct from new.status)
  execute function baton_private.tg_task_handoffs__release_dependents();

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
comment on function public.task_dependencies is 'The tasks a task depends on (in the order it names them), with their status, result and reason, for anyone who may see the task: its executor reads the results it works from here.';

-- Inputs: as before, and the artifacts of the tasks it depends on.
create or replace function public.task_inputs(p_task_id uuid) returns setof public.task_artifacts
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  worker boolean := baton_private.works_on(t, me);
begin
  return query
    select a.* from public.task_artifacts a join public.task_handoffs s on s.id = a.task_id
    where (a.task_id in (select c.id from baton_private.ancestor_ids(t.id) c)
           or a.task_id = any (t.depends_on)
           or exists (
             select from jsonb_array_elements(t.input_artifacts) i
             where (i ->> 'task_id')::uuid = a.task_id and i ->> 'name' = a.name
           ))
      and (worker or a.task_id = any (t.depends_on) or baton_private.can_see_task(s, me))
    order by a.created_at;
end
$$;
comment on function public.task_inputs is 'The artifacts a task works from: its named inputs, its parent chain''s and those of the tasks it depends on. All of them for whoever works on the task; for others, those on tasks they may see and the dependencies''.';

-- Hand-offs: as before, with dependencies and a time to run at.
drop function public.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamptz, integer, uuid, text, boolean, integer, jsonb, jsonb);
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
  on conflict (from_agent, idempotency_key) do nothing
  returning * into t;

  if t.id is null then
    -- A concurrent hand-off with the same key won; return its task.
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
  end if;
  return t;
end
$$;
comment on function public.handoff_task is 'Hands off a task as the calling agent: to p_to_agent, or to every agent holding p_required_capabilities when p_to_agent is null. With p_depends_on it waits until those tasks complete (p_dependency_mode all or any; p_on_dependency_failure cancel or run); with p_run_at it is not claimable before then. With p_allow_offline = false an offline addressee is refused (BT011).';
revoke all on function public.handoff_task from public, anon;
grant execute on function public.handoff_task to authenticated;

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

-- The batch: dependencies and run_at go through handoff_task, one by one; the plain fast path never
-- sees them.
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
  insert into public.agent_usage as u (agent_id) values (me) on conflict (agent_id) do nothing;
  select * into usage from public.agent_usage u where u.agent_id = me for update;
  if usage.open_tasks + jsonb_array_length(p_tasks) > settings.open_tasks_per_sender then
    usage.open_tasks := baton_private.recount_open_tasks(me, 0);
  end if;
  allowance := least(
    settings.handoffs_per_minute - case when usage.minute = date_trunc('minute', now()) then usage.handoffs else 0 end,
    settings.open_tasks_per_sender - usage.open_tasks);
  perform set_config('baton.batch', 'on', true);
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
        made := baton_private.handoff_item(item);
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

-- Claims: a task that waits says what it waits for; a scheduled one says when.
create or replace function public.claim_task(
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

-- A retried task's not_before after a failure is its backoff; a scheduled task that waits out its
-- dependencies keeps its run_at (release_waiting), and a retry backs off as before.

-- Push: a new task that waits for others is not announced as work until they release it, and one
-- scheduled for later is announced with its time, so a listening daemon wakes for it then.
create or replace function baton_private.announce_changes(now_rows jsonb, old_rows jsonb) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  changes jsonb;
begin
  with r as (
    select n.id, n.status, n.to_agent, n.from_agent, n.claimed_by, n.required_capabilities, n.progress_at, n.not_before,
           o.status as old_status, o.to_agent as old_to_agent, o.claimed_by as old_claimed_by, o.progress_at as old_progress_at
    from jsonb_to_recordset(now_rows) as n (id uuid, status text, to_agent text, from_agent text, claimed_by text,
                                              required_capabilities text[], progress_at timestamptz, not_before timestamptz)
    left join jsonb_to_recordset(old_rows) as o (id uuid, status text, to_agent text, claimed_by text, progress_at timestamptz)
      on o.id = n.id
  ), work as (
    select case when r.to_agent is not null then 'agent:' || r.to_agent
                when cardinality(r.required_capabilities) = 0 then 'tasks:open'
                else 'capability:' || r.required_capabilities[1] end as topic,
           'work' as event, r.id, r.status, r.not_before
    from r
    where r.status = 'pending'
      and (r.old_status is null or r.old_status <> 'pending' or r.to_agent is distinct from r.old_to_agent)
      -- A task that waits for others is announced when they release it, not before.
      and r.not_before is distinct from 'infinity'::timestamptz
  ), news as (
    select 'agent:' || w.who as topic, 'task' as event, r.id, r.status, null::timestamptz as not_before
    from r
    cross join lateral (select distinct x.who from unnest(array[r.from_agent, r.claimed_by, r.old_claimed_by]) as x (who)) w
    where w.who is not null and r.old_status is not null
      and (r.status <> r.old_status or r.progress_at is distinct from r.old_progress_at)
  )
  select jsonb_agg(jsonb_build_object('topic', m.topic, 'event', m.event, 'task_id', m.id,
                                      'task', jsonb_strip_nulls(jsonb_build_object('id', m.id, 'status', m.status, 'not_before', m.not_before))))
  into changes
  from (select * from work union all select * from news) m;
  if changes is not null then
    perform baton_private.announce(changes);
  end if;
end
$$;
create or replace function baton_private.tg_task_handoffs__announce() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  -- Only the columns that route a message leave the statement: never a payload.
  if tg_op = 'INSERT' then
    perform baton_private.announce_changes(
      (select jsonb_agg(jsonb_build_object('id', c.id, 'status', c.status, 'to_agent', c.to_agent, 'from_agent', c.from_agent,
                                          'claimed_by', c.claimed_by, 'required_capabilities', c.required_capabilities,
                                          'not_before', c.not_before)) from changed c),
      '[]');
  else
    perform baton_private.announce_changes(
      (select jsonb_agg(jsonb_build_object('id', c.id, 'status', c.status, 'to_agent', c.to_agent, 'from_agent', c.from_agent,
                                          'claimed_by', c.claimed_by, 'required_capabilities', c.required_capabilities,
                                          'progress_at', c.progress_at, 'not_before', c.not_before)) from changed c),
      (select jsonb_agg(jsonb_build_object('id', p.id, 'status', p.status, 'to_agent', p.to_agent,
                                          'claimed_by', p.claimed_by, 'progress_at', p.progress_at)) from previous p));
  end if;
  return null;
end
$$;

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
comment on function public.fan_out is 'Hands off up to 100 sub-tasks of p_parent_task_id and the join task that depends on them, in one transaction. p_join: {mode: first|all|judge, title?, to_agent?, capability? (judge, default "judge"), payload?, expected_outputs?, on_failure?: cancel|run}. Returns {tasks: [ids], join: id}.';
revoke all on function public.fan_out, public.task_dependencies from public, anon;
grant execute on function public.fan_out, public.task_dependencies to authenticated;

-- Dead letters you can act on ----------------------------------------------------------------------
-- A failed task gets a new attempt as a new task with the same work, linked to it (retry_of), made by
-- its sender or by the operator; it is sent as the original sender either way.
create function public.retry_task(p_task_id uuid) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  old public.task_handoffs;
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
comment on function public.retry_task is 'A new attempt at a failed task: a new task with the same work, sent as the original sender, linked by retry_of. Its sender or the operator (service role) may retry; one open retry at a time.';
revoke all on function public.retry_task from public, anon;
grant execute on function public.retry_task to authenticated, service_role;

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

create table public.recurring_handoffs (
  id uuid primary key default gen_random_uuid(),
  name text not null unique check (baton_private.is_slug(name)),
  schedule text not null,
  from_agent text not null references public.agents (id) on delete cascade,
  to_agent text references public.agents (id) on delete cascade,
  required_capabilities text[] not null default '{}',
  template jsonb not null check (jsonb_typeof(template) = 'object' and jsonb_typeof(template -> 'title') = 'string'),
  enabled boolean not null default true,
  next_run_at timestamptz not null,
  last_run_at timestamptz,
  last_task_id uuid references public.task_handoffs (id) on delete set null,
  last_error text,
  created_at timestamptz not null default now()
);
alter table public.recurring_handoffs enable row level security;
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
revoke all on table public.recurring_handoffs from anon, authenticated;
grant select on table public.recurring_handoffs to authenticated;
grant all on table public.recurring_handoffs to service_role;
create policy "Agents can view the schedules sent as them or addressed to them" on public.recurring_handoffs
  for select to authenticated
  using (from_agent = (select baton_private.current_agent_id()) or to_agent = (select baton_private.current_agent_id()));
create index recurring_handoffs_due_idx on public.recurring_handoffs (next_run_at) where enabled;

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
create trigger schedule before insert or update on public.recurring_handoffs
  for each row execute function baton_private.tg_recurring_handoffs__schedule();

alter table public.task_handoffs
  add column recurring_id uuid references public.recurring_handoffs (id) on delete set null,
  add column recurrence_slot timestamptz,
  add constraint task_handoffs_one_per_slot unique (recurring_id, recurrence_slot);
comment on column public.task_handoffs.recurring_id is 'The recurring hand-off that made this task, if any.';
comment on column public.task_handoffs.recurrence_slot is 'The schedule slot it was made for: one task per slot.';

-- Makes the tasks of every due schedule, one per slot: the row lock (skip locked) keeps two sweeps
-- apart, and the unique (recurring_id, recurrence_slot) would refuse a second task for a slot anyway.
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
      on conflict (recurring_id, recurrence_slot) do nothing
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

-- Retention -----------------------------------------------------------------------------------------

alter table public.baton_settings
  add column keep_finished interval check (keep_finished > interval '0'),
  add column retention_batch integer not null default 500 check (retention_batch between 1 and 100000);
comment on column public.baton_settings.keep_finished is 'How long finished chains (every task in them final), with their events, messages and artifacts, are kept after the last of them finished; null keeps them forever. The sweep deletes what is past it, in batches.';
comment on column public.baton_settings.retention_batch is 'At most this many tasks are deleted per sweep, so a sweep stays short.';

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

-- Only roots: retention looks for chains by their root, and no other finished task pays for the entry.
create index task_handoffs_finished_roots_idx on public.task_handoffs (completed_at) where completed_at is not null and id = root_task_id;

-- The sweep: as before, then due schedules and retention.
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
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'claimed' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = due.reason || '; not started'
  from due where t.id = due.id;
  get diagnostics unstarted = row_count;

  perform baton_private.set_note('claim lapsed; re-queued');
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'in_progress' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
      and t.attempts < t.max_attempts
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'pending', status_reason = format('%s; re-queued after attempt %s of %s', due.reason, t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics expired = row_count;

  perform baton_private.set_note('claim lapsed on the last attempt; failed');
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'in_progress' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
      and t.attempts >= t.max_attempts
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'failed', status_reason = format('%s; failed on the last attempt (%s of %s)', due.reason, t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics dead = row_count;

  perform baton_private.set_note('deadline passed');
  with due as (
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.deadline < now()
    for update skip locked
  )
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
comment on function public.sweep_tasks is 'Re-queues claims that lapsed (the holder went unheard for two of its wake-ups, or the lease if longer), fails tasks out of attempts, cancels pending tasks past their deadline, makes the tasks of due recurring hand-offs (one per slot) and deletes finished chains past baton_settings.keep_finished. Cheap when nothing is due; one sweep runs at a time however many daemons call it. Schedule it with pg_cron on a hosted project: select public.sweep_tasks();';

revoke all on function baton_private.tg_task_handoffs__wait_on_dependencies(), baton_private.tg_task_handoffs__keep_dependencies(),
  baton_private.release_waiting(public.task_handoffs), baton_private.tg_task_handoffs__release_dependents(),
  baton_private.cron_field(text, integer, integer), baton_private.cron_next(text, timestamptz),
  baton_private.tg_recurring_handoffs__schedule(), baton_private.run_recurring(), baton_private.apply_retention()
  from public, anon, authenticated;

-- The lineage shows what each task waited for, so a diamond reads as one.
create or replace view public.task_lineage with (security_invoker = true) as
  select t.id, t.root_task_id, t.parent_task_id, t.depth, t.title, t.status, t.status_reason,
         t.from_agent, t.to_agent, t.required_capabilities, t.claimed_by as producer, t.attempts, t.progress_message, t.progress_percent,
         t.created_at, t.started_at, t.completed_at,
         t.input_artifacts as inputs,
         coalesce((
           select jsonb_agg(jsonb_build_object('name', a.name, 'media_type', a.media_type, 'size_bytes', a.size_bytes,
                                               'sha256', a.sha256, 'uri', a.uri, 'producer', a.producer) order by a.name)
           from public.task_artifacts a where a.task_id = t.id), '[]') as outputs,
         t.result -> 'status' as result_status,
         t.result ->> 'summary' as summary,
         t.depends_on,
         t.dependency_mode
  from public.task_handoffs t;

-- The chain of a task: as before, and what waits on it. What the task led to now follows dependency
-- edges too (a task that depends on one in the chain is part of what it led to), so a diamond shows
-- whole; whoever works on the task also gets what it depends on, as it gets its ancestors.
create or replace function public.task_chain(p_task_id uuid) returns setof public.task_lineage
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  context uuid[];
begin
  with recursive below (id) as (
    select t.id
    union
    select c.id from below b cross join lateral (
      select x.id from public.task_handoffs x where x.parent_task_id = b.id
      union all
      select x.id from public.task_handoffs x where x.depends_on <> '{}' and x.depends_on @> array[b.id]
    ) c
  )
  select array(select id from below) into context;
  if baton_private.works_on(t, me) then
    with recursive above (id) as (
      select t.id
      union
      select u.id from above a cross join lateral (
        select p.parent_task_id as id from public.task_handoffs p where p.id = a.id and p.parent_task_id is not null
        union all
        select unnest(p.depends_on) from public.task_handoffs p where p.id = a.id
      ) u
    )
    select context || array(select id from above) into context;
  end if;
  return query
    select l.* from public.task_lineage l join public.task_handoffs s on s.id = l.id
    where s.id = any (context) or (l.root_task_id = t.root_task_id and baton_private.can_see_task(s, me))
    order by l.depth, l.created_at;
end
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

create view public.dead_letters with (security_invoker = true) as
  select t.id, t.title, t.from_agent, t.to_agent, t.required_capabilities, t.claimed_by as last_holder, t.status_reason as reason,
         t.attempts, t.completed_at as failed_at, now() - t.completed_at as age,
         (select r.id from public.task_handoffs r where r.retry_of = t.id order by r.created_at desc limit 1) as retried_as
  from public.task_handoffs t
  where t.status = 'failed';
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

revoke all on public.task_queue, public.stuck_claims, public.dead_letters, public.waiting_tasks from anon, authenticated;
grant select on public.task_queue, public.stuck_claims, public.dead_letters, public.waiting_tasks to authenticated, service_role;
