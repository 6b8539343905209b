-- Limits and quotas. JSON limits (how deep and how wide any stored JSON may be) are checked by a trigger
-- on every table that stores JSON. Quotas count, per agent and clock minute, hand-offs (follow-ups,
-- fan-out, retries and recurring tasks included), notes and progress messages, and artifacts, and bound
-- the tasks a sender has open. They count where the work is created (the insert triggers), so every
-- path counts the same way. Counters are spread over 64 slots per agent (one per database connection),
-- so one sender's concurrent requests do not wait on each other; the exactness this allows is in the
-- README (an overshoot of at most the number of requests in flight at once).

create table public.agent_usage (
  agent_id text not null,
  minute timestamp with time zone not null default date_trunc('minute'::text, now()),
  handoffs integer not null default 0,
  messages integer not null default 0,
  artifacts integer not null default 0,
  open_tasks integer not null default 0,
  slot smallint not null default 0,
  constraint agent_usage_agent_id_fkey FOREIGN KEY (agent_id) REFERENCES public.agents(id) ON DELETE CASCADE,
  constraint agent_usage_pkey PRIMARY KEY (agent_id, slot)
);
alter table public.agent_usage enable row level security;

revoke all on table public.agent_usage from anon, authenticated;
grant select on table public.agent_usage to authenticated;
grant all on table public.agent_usage to service_role;

comment on table public.agent_usage is 'What each agent used of its quotas (baton_settings), in slots (one per database connection, so that an agent''s concurrent requests never wait for each other): hand-offs, messages and artifacts in the current clock minute, and an upper bound on its open tasks. An agent''s usage is the sum over its rows.';
comment on column public.agent_usage.minute is 'The clock minute the three rate counters count; the first use in a later minute starts them again.';
comment on column public.agent_usage.open_tasks is 'Summed over the agent''s slots, an upper bound on how many tasks this agent sent that are not final: each hand-off adds one, and it is recounted from the tasks when it reaches open_tasks_per_sender.';
comment on column public.agent_usage.slot is 'The database connection''s slot that counted these (its backend pid modulo 64).';

-- This connection's slot: the row its requests count in. (No search_path of its own, so that it is
-- inlined where it is used; it names pg_catalog.)
create function baton_private.usage_slot() returns smallint
language sql stable
as $$ select (pg_catalog.pg_backend_pid() % 64)::smallint $$;

revoke all on function baton_private.usage_slot() from public, anon, authenticated;

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

revoke all on function baton_private.add_usage(text, integer, integer, integer) from public, anon, authenticated;

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

revoke all on function baton_private.check_rate(text, text, integer, integer, text) from public, anon, authenticated;

-- Messages and artifacts (their triggers call this).
create function baton_private.use_quota(agent text, what text, quota integer, setting text) returns void
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

-- Sets the agent's open-task bound to what is really open, plus `adding` tasks about to be stored: in
-- this connection's slot, the other slots starting again from zero. Locks the agent's rows, so it runs
-- only when the bound is reached.
create function baton_private.recount_open_tasks(agent text, adding integer) returns integer
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

revoke all on function baton_private.recount_open_tasks(text, integer) from public, anon, authenticated;

-- A task made alone (one hand-off, a follow-up, a retry, a fan-out's parts): counted where it is made.
create function baton_private.tg_task_handoffs__quota() returns trigger
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

create function baton_private.tg_agent_messages__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if baton_private.current_agent_id() is not null and new.kind in ('note', 'progress') then
    perform baton_private.use_quota(new.from_agent, 'messages', (baton_private.settings()).messages_per_minute, 'messages_per_minute');
  end if;
  return new;
end
$$;

create function baton_private.tg_task_artifacts__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if baton_private.current_agent_id() is not null then
    perform baton_private.use_quota(new.producer, 'artifacts', (baton_private.settings()).artifacts_per_minute, 'artifacts_per_minute');
  end if;
  return new;
end
$$;

-- A JSON value nests one level deeper for at least 8 more bytes (a container's header and its entry in
-- its parent), and holds one more item for at least 4 (the entry): one smaller than both limits allow
-- cannot break either, and is not walked. A compressed value's stored size says nothing: it is walked.
create function baton_private.check_json_shape(value jsonb, what text) returns void
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

grant execute on function baton_private.check_json_shape(jsonb, text) to anon, authenticated, service_role;

create function baton_private.tg_task_handoffs__limit_json() returns trigger
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

create function baton_private.tg_agent_messages__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  perform baton_private.check_json_shape(new.body, 'the message body');
  return new;
end
$$;

create function baton_private.tg_agents__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.skills_offered is distinct from old.skills_offered then
    perform baton_private.check_json_shape(new.skills_offered, 'skills_offered');
  end if;
  return new;
end
$$;

create trigger step2_limit_json before insert or update on public.agents
  for each row execute function baton_private.tg_agents__limit_json();

create trigger step2_quota before insert on public.task_artifacts
  for each row execute function baton_private.tg_task_artifacts__quota();

create trigger step1_limit_json before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__limit_json();

create trigger step3_quota before insert on public.task_handoffs
  for each row when (not baton_private.in_batch())
  execute function baton_private.tg_task_handoffs__quota();

create trigger step1_limit_json before insert on public.agent_messages
  for each row when (new.kind <> 'result') execute function baton_private.tg_agent_messages__limit_json();

create trigger step2_quota before insert on public.agent_messages
  for each row when (new.kind in ('note', 'progress')) execute function baton_private.tg_agent_messages__quota();

create trigger step2_limit_json_on_change before update on public.task_handoffs
  for each row when (new.payload is distinct from old.payload or new.problems is distinct from old.problems)
  execute function baton_private.tg_task_handoffs__limit_json();

create policy "Agents can see their own usage" on public.agent_usage
  for select to authenticated using (agent_id = (select baton_private.current_agent_id()));
