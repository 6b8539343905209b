-- The conversation: messages between agents (notes, progress, questions, answers, results), alone or
-- on a task's thread. A holder's question puts the task in input_required; the sender's answer puts it
-- back in progress. A message is always from the agent whose token sent it.

create table public.agent_messages (
  id uuid not null default gen_random_uuid(),
  from_agent text not null default baton_private.current_agent_id(),
  to_agent text,
  task_id uuid,
  reply_to_id uuid,
  kind public.message_kind not null default 'note'::public.message_kind,
  body jsonb not null,
  created_at timestamp with time zone not null default now(),
  read_at timestamp with time zone,
  constraint agent_messages_from_agent_fkey FOREIGN KEY (from_agent) REFERENCES public.agents(id),
  constraint agent_messages_pkey PRIMARY KEY (id),
  constraint agent_messages_reply_to_id_fkey FOREIGN KEY (reply_to_id) REFERENCES public.agent_messages(id),
  constraint agent_messages_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.task_handoffs(id) ON DELETE CASCADE,
  constraint agent_messages_to_agent_fkey FOREIGN KEY (to_agent) REFERENCES public.agents(id)
);
alter table public.agent_messages enable row level security;

revoke all on table public.agent_messages from anon, authenticated;
grant select on table public.agent_messages to authenticated;
grant insert (from_agent, to_agent, task_id, reply_to_id, kind, body) on table public.agent_messages to authenticated;
grant update (read_at) on table public.agent_messages to authenticated;
grant select, insert, update, delete on table public.agent_messages to service_role;

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

-- A policy on agent_messages cannot query agent_messages itself (that recurses), hence this helper.
create function baton_private.can_see_message(message_id uuid, agent text) returns boolean
language sql stable security definer set search_path = ''
as $$
  select exists (
    select from public.agent_messages m
    where m.id = message_id and (m.from_agent = agent or m.to_agent = agent or m.to_agent is null)
  )
$$;

grant execute on function baton_private.can_see_message(uuid, text) to anon, authenticated, service_role;

create function public.ask_question(p_task_id uuid, p_question text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, t.claim_token);
  perform baton_private.require_text(p_question, 'a question', 'Ask what you need from the sender.');
  if t.status <> 'in_progress' then
    raise exception 'task % is %; only a task in progress can wait for input', t.id, t.status
      using errcode = 'BT001',
            hint = case when t.status = 'claimed' then 'Start it first (baton start <task>).' else 'Wait for the answer to the question already asked.' end;
  end if;
  perform baton_private.set_note(p_question);
  update public.task_handoffs set status = 'input_required', status_reason = p_question
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
  values (me, t.from_agent, t.id, 'question', jsonb_build_object('text', p_question));
  return t;
end
$$;

revoke all on function public.ask_question from public, anon;
grant execute on function public.ask_question to authenticated;

comment on function public.ask_question is 'The holder asks the sender a question; the task waits in input_required (keeping its claim) until answered.';

-- The answer replies to the holder's own question, the newest one it asked.
create function public.answer_question(p_task_id uuid, p_answer text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  question uuid;
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can answer questions on task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Send a message to the holder instead.';
  end if;
  perform baton_private.require_text(p_answer, 'an answer', 'Give the holder what it asked for.');
  if t.status <> 'input_required' then
    raise exception 'task % is %; there is no open question to answer', t.id, t.status
      using errcode = 'BT001', hint = 'Send a message instead: baton message <agent> <text> --task <task>.';
  end if;
  select m.id into question from public.agent_messages m
  where m.task_id = t.id and m.kind = 'question' and m.from_agent = t.claimed_by
  order by m.created_at desc limit 1;
  perform baton_private.set_note('answered');
  -- The wait did not use up the holder's lease: it starts afresh with the work.
  update public.task_handoffs
  set status = 'in_progress', status_reason = null,
      lease_expires_at = now() + coalesce(t.claim_lease, make_interval(secs => t.lease_seconds), (baton_private.settings()).default_lease)
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  insert into public.agent_messages (from_agent, to_agent, task_id, reply_to_id, kind, body)
  values (me, t.claimed_by, t.id, question, 'answer', jsonb_build_object('text', p_answer));
  return t;
end
$$;

revoke all on function public.answer_question from public, anon;
grant execute on function public.answer_question to authenticated;

comment on function public.answer_question is 'The sender answers the holder''s question; the task resumes (input_required to in_progress).';

-- Result messages ----------------------------------------------------------------------------------
-- The message that tells a sender how its task ended is written by the trigger that follows every change
-- (history_and_push) from the task's status, result and reason, each already checked on the task (a
-- result may be 256 KiB). The limits on what agents send (64 KiB, JSON shape, the per-minute quota)
-- apply to the messages agents write and are not evaluated for result messages at all: applied to
-- them, a result between 64 and 256 KiB made its completion fail.
create function baton_private.tg_agent_messages__validate() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    if new.kind <> 'result' and octet_length(new.body::text) > 65536 then
      raise exception 'the message is % bytes; the limit is 64 KiB', octet_length(new.body::text)
        using errcode = 'BT005', hint = 'Send a link to long material instead.';
    end if;
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

create trigger step3_validate before insert on public.agent_messages
  for each row when (new.kind <> 'result') execute function baton_private.tg_agent_messages__validate();

create trigger step1_validate_change before update on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__validate();

create policy "Agents can read messages from them, to them, or to everyone" on public.agent_messages
  for select to authenticated
  using (
    from_agent = (select baton_private.current_agent_id())
    or to_agent = (select baton_private.current_agent_id())
    or to_agent is null
  );

create policy "Agents can mark read only messages sent to them" on public.agent_messages
  for update to authenticated
  using (to_agent = (select baton_private.current_agent_id()))
  with check (to_agent = (select baton_private.current_agent_id()));

create policy "Agents can send notes only as themselves, on tasks they can view" on public.agent_messages
  for insert to authenticated
  with check (
    kind = 'note'
    and from_agent = (select baton_private.current_agent_id())
    and (task_id is null or exists (select from public.task_handoffs t where t.id = task_id))
    and (reply_to_id is null or baton_private.can_see_message(reply_to_id, (select baton_private.current_agent_id())))
  );
