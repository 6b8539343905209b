-- While a task is under way: the holder reports progress and asks the sender questions; the sender
-- answers, or hands the task to another agent. Each exchange lands on the task and in its message thread.

create function public.report_progress(p_task_id uuid, p_message text, p_percent integer default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  -- Progress needs the holder, not the claim token: any process of the holding agent may report.
  perform baton_private.check_holder(t, me, t.claim_token);
  perform baton_private.require_text(p_message, 'a progress report', 'Say in one line what is done or happening.');
  if t.status not in ('claimed', 'in_progress') then
    raise exception 'task % is %; progress is reported on a claimed or running task', t.id, t.status
      using errcode = 'BT001', hint = 'Wait for the sender''s answer first.';
  end if;
  update public.task_handoffs
  set progress_message = p_message, progress_percent = p_percent, progress_at = now()
  where id = t.id returning * into t;
  insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
  values (me, t.from_agent, t.id, 'progress',
          jsonb_strip_nulls(jsonb_build_object('text', p_message, 'percent', p_percent)));
  return t;
end
$$;
comment on function public.report_progress is 'The holder reports progress: stored on the task and sent to the sender as a progress message.';

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
comment on function public.ask_question is 'The holder asks the sender a question; the task waits in input_required (keeping its claim) until answered.';

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
  where m.task_id = t.id and m.kind = 'question' order by m.created_at desc limit 1;
  perform baton_private.set_note('answered');
  -- The wait did not use up the holder's lease: it starts afresh with the work.
  update public.task_handoffs
  set status = 'in_progress', status_reason = null,
      lease_expires_at = now() + coalesce(make_interval(secs => t.lease_seconds), (baton_private.settings()).default_lease)
  where id = t.id returning * into t;
  perform baton_private.set_note(null);
  insert into public.agent_messages (from_agent, to_agent, task_id, reply_to_id, kind, body)
  values (me, t.claimed_by, t.id, question, 'answer', jsonb_build_object('text', p_answer));
  return t;
end
$$;
comment on function public.answer_question is 'The sender answers the holder''s question; the task resumes (input_required to in_progress).';

create function public.reassign_task(p_task_id uuid, p_to_agent text, p_reason text default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  note text;
begin
  if t.from_agent <> me then
    raise exception 'only the sender "%" can reassign task %', t.from_agent, t.id
      using errcode = 'BT003', hint = 'Release it if you hold it (baton release <task>).';
  end if;
  if not exists (select from public.agents a where a.id = p_to_agent) then
    raise exception 'no agent named "%"', p_to_agent using errcode = 'BT002', hint = 'See who is registered: baton discover --all.';
  end if;
  if t.status not in ('pending', 'claimed', 'in_progress') then
    raise exception 'task % is %; only a pending, claimed or running task can be reassigned', t.id, t.status
      using errcode = 'BT001',
            hint = case when t.status = 'input_required' then 'Answer or cancel it first.' else 'A final task cannot change; hand off a new one.' end;
  end if;
  note := format('reassigned from %s to %s%s', coalesce(t.to_agent, 'everyone'), p_to_agent,
                 case when p_reason is null then '' else ': ' || p_reason end);
  if t.status = 'pending' then
    update public.task_handoffs set to_agent = p_to_agent where id = t.id returning * into t;
    insert into public.task_events (task_id, actor, from_status, to_status, note)
    values (t.id, me, 'pending', 'pending', note);
  else
    -- Taken from its holder without counting the attempt against the task.
    perform baton_private.set_note(note);
    update public.task_handoffs set status = 'pending', to_agent = p_to_agent, attempts = greatest(attempts - 1, 0)
    where id = t.id returning * into t;
    perform baton_private.set_note(null);
  end if;
  return t;
end
$$;
comment on function public.reassign_task is 'The sender gives a task that is not final to another agent; a held task goes back to pending for it. Noted in task_events.';

revoke all on function public.report_progress, public.ask_question, public.answer_question, public.reassign_task from public, anon;
grant execute on function public.report_progress, public.ask_question, public.answer_question, public.reassign_task to authenticated;
