-- Per-agent quotas: one runaway bot cannot bury a project in tasks, messages or artifacts. Each is a
-- setting; a call past it is refused with BT013 and a hint that says when to try again. Operators
-- (the service role) are not held to them. Usage is kept as counters, so a check costs the same however
-- busy the agent is: per clock minute for the rates, and a running count of open tasks per sender.

alter table public.baton_settings
  add column handoffs_per_minute integer not null default 600 check (handoffs_per_minute >= 1),
  add column messages_per_minute integer not null default 600 check (messages_per_minute >= 1),
  add column artifacts_per_minute integer not null default 600 check (artifacts_per_minute >= 1),
  add column open_tasks_per_sender integer not null default 10000 check (open_tasks_per_sender >= 1);
comment on column public.baton_settings.handoffs_per_minute is 'How many tasks one agent may hand off (follow-ups included) in one clock minute.';
comment on column public.baton_settings.messages_per_minute is 'How many notes and progress reports one agent may send in one clock minute (results, questions and answers are not counted).';
comment on column public.baton_settings.artifacts_per_minute is 'How many artifacts one agent may attach in one clock minute.';
comment on column public.baton_settings.open_tasks_per_sender is 'How many of one agent''s tasks may be open (not final) at once.';

create table public.agent_usage (
  agent_id text primary key references public.agents (id) on delete cascade,
  minute timestamptz not null default date_trunc('minute', now()),
  handoffs integer not null default 0,
  messages integer not null default 0,
  artifacts integer not null default 0,
  open_tasks integer not null default 0
);
alter table public.agent_usage enable row level security;
comment on table public.agent_usage is 'What each agent used of its quotas (baton_settings): hand-offs, messages and artifacts in the current clock minute, and its open tasks. Kept by triggers.';
comment on column public.agent_usage.minute is 'The clock minute the three rate counters count; the first use in a later minute starts them again.';
comment on column public.agent_usage.open_tasks is 'How many tasks this agent sent that are not final yet.';
revoke all on table public.agent_usage from anon, authenticated;
grant select on table public.agent_usage to authenticated;
grant all on table public.agent_usage to service_role;
create policy "Agents can see their own usage" on public.agent_usage
  for select to authenticated using (agent_id = (select baton_private.current_agent_id()));

insert into public.agent_usage (agent_id, open_tasks)
select a.id, (select count(*) from public.task_handoffs t
              where t.from_agent = a.id and t.status in ('pending', 'claimed', 'in_progress', 'input_required'))
from public.agents a;

-- Counts one use of `what` (handoffs, messages or artifacts) by `agent` and refuses it past `quota`.
create function baton_private.use_quota(agent text, what text, quota integer, setting text) returns void
language plpgsql security definer set search_path = ''
as $$
declare
  used integer;
  this_minute timestamptz := date_trunc('minute', now());
begin
  insert into public.agent_usage as u (agent_id, minute, handoffs, messages, artifacts)
  values (agent, this_minute, (what = 'handoffs')::int, (what = 'messages')::int, (what = 'artifacts')::int)
  on conflict (agent_id) do update set
    minute = this_minute,
    handoffs = case when u.minute = this_minute then u.handoffs else 0 end + (what = 'handoffs')::int,
    messages = case when u.minute = this_minute then u.messages else 0 end + (what = 'messages')::int,
    artifacts = case when u.minute = this_minute then u.artifacts else 0 end + (what = 'artifacts')::int
  returning case what when 'handoffs' then u.handoffs when 'messages' then u.messages else u.artifacts end into used;
  if used > quota then
    raise exception 'agent "%" reached its quota of % % per minute', agent, quota, replace(what, 'handoffs', 'hand-offs')
      using errcode = 'BT013',
            hint = format('Try again in %s s; an operator can raise baton_settings.%s.',
                          greatest(ceil(extract(epoch from this_minute + interval '1 minute' - now())), 1), setting);
  end if;
end
$$;

-- A batch (handoff_tasks, report_outcomes) counts its tasks once, at its end: updating one counter row a
-- thousand times in one transaction walks an ever longer chain of row versions.
create function baton_private.in_batch() returns boolean
language sql stable set search_path = ''
as $$ select coalesce(current_setting('baton.batch', true), '') = 'on' $$;

create function baton_private.tg_task_handoffs__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  open_now integer;
begin
  if baton_private.in_batch() then
    return new;
  end if;
  -- Every new task counts as open for its sender, whoever made it, so that finishing it balances.
  insert into public.agent_usage as u (agent_id, open_tasks) values (new.from_agent, 1)
  on conflict (agent_id) do update set open_tasks = u.open_tasks + 1
  returning u.open_tasks into open_now;
  if baton_private.current_agent_id() is null then
    return new;
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
create trigger quota before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__quota();

-- A task that becomes final no longer counts as open for its sender; once per statement.
create function baton_private.tg_task_handoffs__close_usage() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if baton_private.in_batch() then
    return null;
  end if;
  update public.agent_usage u set open_tasks = greatest(u.open_tasks - closed.n, 0)
  from (
    select n.from_agent, count(*)::integer as n from changed n join previous o on o.id = n.id
    where o.status in ('pending', 'claimed', 'in_progress', 'input_required')
      and n.status in ('completed', 'failed', 'rejected', 'cancelled')
    group by n.from_agent
  ) closed
  where u.agent_id = closed.from_agent;
  return null;
end
$$;
create trigger close_usage after update on public.task_handoffs
  referencing new table as changed old table as previous
  for each statement execute function baton_private.tg_task_handoffs__close_usage();

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
create trigger quota before insert on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__quota();

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
create trigger quota before insert on public.task_artifacts
  for each row execute function baton_private.tg_task_artifacts__quota();
