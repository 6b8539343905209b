-- Messages between agents: notes, progress, questions and answers, optionally threaded on a task.

create type public.message_kind as enum ('note', 'progress', 'question', 'answer', 'result');
comment on type public.message_kind is 'What a message is for; question and answer carry the input_required exchange of a task.';

create table public.agent_messages (
  id uuid primary key default gen_random_uuid(),
  from_agent text not null references public.agents (id),
  to_agent text references public.agents (id),
  task_id uuid references public.task_handoffs (id) on delete cascade,
  reply_to_id uuid references public.agent_messages (id),
  kind public.message_kind not null default 'note',
  body jsonb not null,
  created_at timestamptz not null default now(),
  read_at timestamptz
);
alter table public.agent_messages enable row level security;
comment on table public.agent_messages is 'Messages between agents. Sent only as oneself; readable by sender, recipient, or everyone when to_agent is null.';
comment on column public.agent_messages.from_agent is 'The sender: always the agent whose token sent it.';
comment on column public.agent_messages.to_agent is 'The recipient; null sends it to every agent.';
comment on column public.agent_messages.task_id is 'The task whose thread this message belongs to, if any.';
comment on column public.agent_messages.reply_to_id is 'The message this one answers, if any.';
comment on column public.agent_messages.body is 'The content, JSON (at most 64 KiB); plain text arrives as {"text": "..."}.';
comment on column public.agent_messages.read_at is 'When the recipient marked it read (direct messages only).';

create index agent_messages_to_agent_idx on public.agent_messages (to_agent, created_at desc);
create index agent_messages_from_agent_idx on public.agent_messages (from_agent, created_at desc);
create index agent_messages_task_idx on public.agent_messages (task_id, created_at) where task_id is not null;
create index agent_messages_unread_idx on public.agent_messages (to_agent) where read_at is null;

create function baton_private.tg_agent_messages__validate() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if octet_length(new.body::text) > 65536 then
    raise exception 'the message is % bytes; the limit is 64 KiB', octet_length(new.body::text)
      using errcode = 'BT005', hint = 'Send a link to long material instead.';
  end if;
  if tg_op = 'INSERT' then
    new.created_at := now();
    new.read_at := null;
  elsif new.id <> old.id or new.from_agent <> old.from_agent or new.to_agent is distinct from old.to_agent
        or new.task_id is distinct from old.task_id or new.body <> old.body or new.kind <> old.kind
        or new.created_at <> old.created_at or new.reply_to_id is distinct from old.reply_to_id then
    raise exception 'a sent message cannot change' using errcode = 'BT005', hint = 'Send a new message instead.';
  end if;
  return new;
end
$$;
create trigger validate before insert or update on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__validate();

revoke all on table public.agent_messages from anon, authenticated;
grant select on table public.agent_messages to authenticated;
grant insert (from_agent, to_agent, task_id, reply_to_id, kind, body) on table public.agent_messages to authenticated;
grant update (read_at) on table public.agent_messages to authenticated;
grant select, insert, update, delete on table public.agent_messages to service_role;

alter table public.agent_messages alter column from_agent set default baton_private.current_agent_id();

-- A policy on agent_messages cannot query agent_messages itself (that recurses), hence this helper.
create function baton_private.can_see_message(message_id uuid, agent text) returns boolean
language sql stable security definer set search_path = ''
as $$
  select exists (
    select from public.agent_messages m
    where m.id = message_id and (m.from_agent = agent or m.to_agent = agent or m.to_agent is null)
  )
$$;

create policy "Agents can read messages from them, to them, or to everyone" on public.agent_messages
  for select to authenticated
  using (
    from_agent = (select baton_private.current_agent_id())
    or to_agent = (select baton_private.current_agent_id())
    or to_agent is null
  );

create policy "Agents can send messages only as themselves, on tasks they can view" on public.agent_messages
  for insert to authenticated
  with check (
    from_agent = (select baton_private.current_agent_id())
    and (task_id is null or exists (select from public.task_handoffs t where t.id = task_id))
    and (reply_to_id is null or baton_private.can_see_message(reply_to_id, (select baton_private.current_agent_id())))
  );

create policy "Agents can mark read only messages sent to them" on public.agent_messages
  for update to authenticated
  using (to_agent = (select baton_private.current_agent_id()))
  with check (to_agent = (select baton_private.current_agent_id()));
