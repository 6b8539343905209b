-- Quotas that do not serialize a sender. Each agent's usage was one counter row, locked by every
-- hand-off until its commit, so one sender's concurrent single hand-offs queued behind each other (53 of
-- a single hand-off's 55 ms were spent waiting on that row with 32 in flight). The counters are now
-- spread over slots, one per database connection (its backend pid modulo 64): a request counts in its
-- own connection's row and checks the sum over the agent's rows, which it reads without a lock.
--
-- What that promises: a quota is exact for requests that do not overlap. Requests of one agent that run
-- at the same moment do not see each other's uncounted use, so up to as many as run at once may pass a
-- quota together: at most the API's connection pool (PostgREST's db-pool; 20 on the embedded stack,
-- 10-60 on hosted Supabase) for single calls, and one batch's size for each batch in flight. The refusal
-- is as before: BT013 with when to try again.

alter table public.agent_usage add column slot smallint not null default 0;
alter table public.agent_usage drop constraint agent_usage_pkey;
alter table public.agent_usage add primary key (agent_id, slot);
comment on table public.agent_usage is 'What each agent used of its quotas (baton_settings), in slots (one per database connection, so that an agent''s concurrent requests never wait for each other): hand-offs, messages and artifacts in the current clock minute, and an upper bound on its open tasks. An agent''s usage is the sum over its rows.';
comment on column public.agent_usage.slot is 'The database connection''s slot that counted these (its backend pid modulo 64).';
comment on column public.agent_usage.open_tasks is 'Summed over the agent''s slots, an upper bound on how many tasks this agent sent that are not final: each hand-off adds one, and it is recounted from the tasks when it reaches open_tasks_per_sender.';

-- This connection's slot: the row its requests count in. (No search_path of its own, so that it is
-- inlined where it is used; it names pg_catalog.)
create function baton_private.usage_slot() returns smallint
language sql stable
as $$ select (pg_catalog.pg_backend_pid() % 64)::smallint $$;

-- Every quota counts through here: adds what `agent` used to this connection's slot (nothing, to read
-- only) and returns its use in all: its open tasks (an upper bound; each hand-off opens one) and its
-- hand-offs, messages and artifacts this minute.
create function baton_private.add_usage(
  agent text, add_handoffs integer, add_messages integer, add_artifacts integer,
  out open_tasks integer, out handoffs integer, out messages integer, out artifacts integer
)
language plpgsql security definer set search_path = ''
as $$
#variable_conflict use_column
declare
  this_minute timestamptz := date_trunc('minute', now());
begin
  if add_handoffs + add_messages + add_artifacts > 0 then
    insert into public.agent_usage as u (agent_id, slot, minute, handoffs, messages, artifacts, open_tasks)
    values (agent, baton_private.usage_slot(), this_minute, add_handoffs, add_messages, add_artifacts, add_handoffs)
    on conflict (agent_id, slot) do update set
      minute = this_minute,
      handoffs = case when u.minute = this_minute then u.handoffs else 0 end + add_handoffs,
      messages = case when u.minute = this_minute then u.messages else 0 end + add_messages,
      artifacts = case when u.minute = this_minute then u.artifacts else 0 end + add_artifacts,
      open_tasks = u.open_tasks + add_handoffs;
  end if;
  select coalesce(sum(u.open_tasks), 0),
         coalesce(sum(u.handoffs) filter (where u.minute = this_minute), 0),
         coalesce(sum(u.messages) filter (where u.minute = this_minute), 0),
         coalesce(sum(u.artifacts) filter (where u.minute = this_minute), 0)
  into open_tasks, handoffs, messages, artifacts
  from public.agent_usage u where u.agent_id = agent;
end
$$;

-- Refuses a use that took `what` past its per-minute quota, saying when to try again.
create function baton_private.check_rate(agent text, what text, used integer, quota integer, setting text) returns void
language plpgsql set search_path = ''
as $$
begin
  if used > quota then
    raise exception 'agent "%" reached its quota of % % per minute', agent, quota, replace(what, 'handoffs', 'hand-offs')
      using errcode = 'BT013',
            hint = format('Try again in %s s; an operator can raise baton_settings.%s.',
                          greatest(ceil(extract(epoch from date_trunc('minute', now()) + interval '1 minute' - now())), 1), setting);
  end if;
end
$$;

-- Sets the agent's open-task bound to what is really open, plus `adding` tasks about to be stored: in
-- this connection's slot, the other slots starting again from zero. Locks the agent's rows, so it runs
-- only when the bound is reached.
create or replace function baton_private.recount_open_tasks(agent text, adding integer) returns integer
language plpgsql security definer set search_path = ''
as $$
declare
  really integer := adding + (select count(*) from public.task_handoffs t
                              where t.from_agent = agent and t.status in ('pending', 'claimed', 'in_progress', 'input_required'));
begin
  insert into public.agent_usage (agent_id, slot) values (agent, baton_private.usage_slot()) on conflict do nothing;
  update public.agent_usage u set open_tasks = case when u.slot = baton_private.usage_slot() then really else 0 end
  where u.agent_id = agent;
  return really;
end
$$;

-- Messages and artifacts (their triggers call this).
create or replace function baton_private.use_quota(agent text, what text, quota integer, setting text) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  used record;
begin
  select * into used from baton_private.add_usage(agent, (what = 'handoffs')::int, (what = 'messages')::int, (what = 'artifacts')::int);
  perform baton_private.check_rate(agent, what,
    case what when 'handoffs' then used.handoffs when 'messages' then used.messages else used.artifacts end, quota, setting);
end
$$;

-- A task made alone (one hand-off, a follow-up, a retry, a fan-out's parts): counted where it is made.
create or replace function baton_private.tg_task_handoffs__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  used record;
begin
  select * into used from baton_private.add_usage(new.from_agent, 1, 0, 0);
  if baton_private.current_agent_id() is null then
    return new;
  end if;
  if used.open_tasks > settings.open_tasks_per_sender then
    -- This task is not stored yet: it counts as the one being added.
    used.open_tasks := baton_private.recount_open_tasks(new.from_agent, 1);
  end if;
  if used.open_tasks > settings.open_tasks_per_sender then
    raise exception 'agent "%" already has % open tasks, its quota', new.from_agent, settings.open_tasks_per_sender
      using errcode = 'BT013',
            hint = 'Wait for some to finish, or cancel those no longer needed; an operator can raise baton_settings.open_tasks_per_sender.';
  end if;
  perform baton_private.check_rate(new.from_agent, 'handoffs', used.handoffs, settings.handoffs_per_minute, 'handoffs_per_minute');
  return new;
end
$$;

revoke all on function baton_private.usage_slot(), baton_private.add_usage(text, integer, integer, integer),
  baton_private.check_rate(text, text, integer, integer, text) from public, anon, authenticated;

-- The batch reads the sender's usage without a lock and counts what it made in its own slot.
create or replace function public.handoff_tasks(p_tasks jsonb)
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
