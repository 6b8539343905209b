-- A task whose holder gives up while it waits for an answer (issue 74).
--
-- A run stopped while its question was open (its budget spent, say, as the agent ran `baton ask`) could
-- not be reported: fail_task took only a task in progress, so the daemon's outcome was refused as if
-- its claim were lost, and the task stayed input_required with nothing running; answered, it went back
-- in progress with nobody working on it. The holder may now fail or hand back a task that waits for
-- an answer, as it may one in progress: re-queued (where a spent budget then holds or fails it, as the
-- sender chose) or failed. The question stays in the record; answering it after that is refused
-- (BT001: there is no open question), so no answer resumes a run that is gone.

insert into public.task_status_transitions (from_status, to_status, meaning) values
  ('input_required', 'pending', 'the holder gave up waiting for an answer, or it was re-queued'),
  ('input_required', 'failed', 'the holder gave up while waiting for an answer');

create or replace function baton_private.fail_task(p_task_id uuid, p_claim_token uuid, p_error text, p_retry boolean default false, p_problems jsonb default null)
returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  perform baton_private.check_holder(t, me, p_claim_token);
  perform baton_private.require_text(p_error, 'the reason for a failure', 'Say what went wrong, in one line.');
  if t.status not in ('in_progress', 'input_required') then
    raise exception 'task % is %; only a task in progress (or waiting for an answer) can fail', t.id, t.status
      using errcode = 'BT001', hint = 'Release a claimed task instead (baton release <task>).';
  end if;
  if p_retry and t.attempts < t.max_attempts then
    perform baton_private.set_note(format('retry after attempt %s of %s: %s', t.attempts, t.max_attempts, p_error));
    update public.task_handoffs
    set status = 'pending', status_reason = p_error, problems = p_problems, not_before = now() + baton_private.retry_delay(t.attempts)
    where id = t.id returning * into t;
  else
    perform baton_private.set_note(case when p_retry then format('out of attempts (%s of %s): %s', t.attempts, t.max_attempts, p_error) else p_error end);
    update public.task_handoffs set status = 'failed', status_reason = p_error, problems = p_problems
    where id = t.id returning * into t;
  end if;
  perform baton_private.set_note(null);
  return t;
end
$$;
