-- Per-agent quotas: one runaway bot cannot bury a project in tasks, messages or artifacts. Each is a
-- setting; a call past it is refused with BT013 and a hint that says when to try again. Operators
-- (the service role) are not counted.

alter table public.baton_settings
  add column handoffs_per_minute integer not null default 600 check (handoffs_per_minute >= 1),
  add column messages_per_minute integer not null default 600 check (messages_per_minute >= 1),
  add column artifacts_per_minute integer not null default 600 check (artifacts_per_minute >= 1),
  add column open_tasks_per_sender integer not null default 10000 check (open_tasks_per_sender >= 1);
comment on column public.baton_settings.handoffs_per_minute is 'How many tasks one agent may hand off (follow-ups included) in any 60 seconds.';
comment on column public.baton_settings.messages_per_minute is 'How many notes and progress reports one agent may send in any 60 seconds (results, questions and answers are not counted).';
comment on column public.baton_settings.artifacts_per_minute is 'How many artifacts one agent may attach in any 60 seconds.';
comment on column public.baton_settings.open_tasks_per_sender is 'How many of one agent''s tasks may be open (not final) at once.';

create index task_handoffs_sent_at_idx on public.task_handoffs (from_agent, created_at);
create index task_handoffs_open_from_agent_idx on public.task_handoffs (from_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required');
create index task_artifacts_producer_at_idx on public.task_artifacts (producer, created_at);

-- Refuses the call when `used` (the newest `quota` calls of the last minute, the oldest of them at
-- `oldest`) reached `quota`; a slot frees when that oldest one leaves the minute.
create function baton_private.check_rate(used integer, quota integer, oldest timestamptz, what text, setting text) returns void
language plpgsql stable set search_path = ''
as $$
begin
  if used >= quota then
    raise exception 'agent "%" reached its quota of % % per minute', baton_private.current_agent_id(), quota, what
      using errcode = 'BT013',
            hint = format('Try again in %s s; an operator can raise baton_settings.%s.',
                          greatest(ceil(extract(epoch from oldest + interval '1 minute' - now())), 1), setting);
  end if;
end
$$;

create function baton_private.tg_task_handoffs__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  used integer;
  oldest timestamptz;
begin
  if baton_private.current_agent_id() is null then
    return new;
  end if;
  select count(*), min(w.created_at) into used, oldest from (
    select t.created_at from public.task_handoffs t
    where t.from_agent = new.from_agent and t.created_at > now() - interval '1 minute'
    order by t.created_at desc limit settings.handoffs_per_minute
  ) w;
  perform baton_private.check_rate(used, settings.handoffs_per_minute, oldest, 'hand-offs', 'handoffs_per_minute');
  select count(*) into used from (
    select from public.task_handoffs t
    where t.from_agent = new.from_agent and t.status in ('pending', 'claimed', 'in_progress', 'input_required')
    limit settings.open_tasks_per_sender
  ) o;
  if used >= settings.open_tasks_per_sender then
    raise exception 'agent "%" already has % open tasks, its quota', new.from_agent, settings.open_tasks_per_sender
      using errcode = 'BT013',
            hint = 'Wait for some to finish, or cancel those no longer needed; an operator can raise baton_settings.open_tasks_per_sender.';
  end if;
  return new;
end
$$;
create trigger quota before insert on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__quota();

create function baton_private.tg_agent_messages__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  quota integer := (baton_private.settings()).messages_per_minute;
  used integer;
  oldest timestamptz;
begin
  if baton_private.current_agent_id() is null or new.kind not in ('note', 'progress') then
    return new;
  end if;
  select count(*), min(w.created_at) into used, oldest from (
    select m.created_at from public.agent_messages m
    where m.from_agent = new.from_agent and m.created_at > now() - interval '1 minute' and m.kind in ('note', 'progress')
    order by m.created_at desc limit quota
  ) w;
  perform baton_private.check_rate(used, quota, oldest, 'messages', 'messages_per_minute');
  return new;
end
$$;
create trigger quota before insert on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__quota();

create function baton_private.tg_task_artifacts__quota() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  quota integer := (baton_private.settings()).artifacts_per_minute;
  used integer;
  oldest timestamptz;
begin
  if baton_private.current_agent_id() is null then
    return new;
  end if;
  select count(*), min(w.created_at) into used, oldest from (
    select a.created_at from public.task_artifacts a
    where a.producer = new.producer and a.created_at > now() - interval '1 minute'
    order by a.created_at desc limit quota
  ) w;
  perform baton_private.check_rate(used, quota, oldest, 'artifacts', 'artifacts_per_minute');
  return new;
end
$$;
create trigger quota before insert or update on public.task_artifacts
  for each row execute function baton_private.tg_task_artifacts__quota();
