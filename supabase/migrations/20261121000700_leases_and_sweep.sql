-- Keeping claims honest: holders renew their leases; a sweep, safe to run from every daemon at once,
-- re-queues what was dropped and cancels what is overdue; senders hear of every outcome.

-- The holder's view of its claims: renews the leases of those it still holds (p_renew) and says, for
-- each, whether the claim is still current, so that a daemon can stop work that was cancelled,
-- re-queued or taken over.
create function public.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
returns table (task_id uuid, status public.task_status, current boolean, lease_expires_at timestamptz)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
begin
  if cardinality(p_task_ids) is distinct from cardinality(p_claim_tokens) then
    raise exception 'give one claim token for each task id' using errcode = 'BT005', hint = 'Pass the two arrays in the same order.';
  end if;
  if p_renew then
    update public.task_handoffs t
    set lease_expires_at = now() + coalesce(make_interval(secs => t.lease_seconds), (baton_private.settings()).default_lease)
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me and t.status in ('claimed', 'in_progress');
  end if;
  return query
    select c.id, t.status,
           coalesce(t.claimed_by = me and t.claim_token = c.token and t.status in ('claimed', 'in_progress', 'input_required'), false),
           t.lease_expires_at
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    left join public.task_handoffs t on t.id = c.id and baton_private.can_see_task(t, me);
end
$$;
comment on function public.check_claims is 'For each of the caller''s claims: is it still current? With p_renew, extends the leases of those that are.';

create function public.sweep_tasks() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  silent integer;
  unstarted integer;
  expired integer;
  dead integer;
  overdue integer;
begin
  perform set_config('baton.actor', 'sweep', true);

  -- A holder that heartbeats, then goes silent, loses its claims at once; the attempt is given back.
  perform baton_private.set_note('holder went silent; re-queued');
  with due as (
    select t.id from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status in ('claimed', 'in_progress')
      and a.is_active and a.last_heartbeat < now() - settings.offline_after
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = format('holder %s went silent', t.claimed_by)
  from due where t.id = due.id;
  get diagnostics silent = row_count;

  -- A claim that lapsed before the work started was no attempt at the work.
  perform baton_private.set_note('lease expired before the work started; re-queued');
  with due as (
    select t.id from public.task_handoffs t
    where t.status = 'claimed' and t.lease_expires_at < now()
    for update skip locked
  )
  update public.task_handoffs t
  set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = 'lease expired before the work started'
  from due where t.id = due.id;
  get diagnostics unstarted = row_count;

  perform baton_private.set_note('lease expired; re-queued');
  with due as (
    select t.id from public.task_handoffs t
    where t.status = 'in_progress' and t.lease_expires_at < now() and t.attempts < t.max_attempts
    for update skip locked
  )
  update public.task_handoffs t
  set status = 'pending', status_reason = format('lease expired on attempt %s of %s', t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics expired = row_count;

  -- The dead letter: out of attempts, the task fails for good with the reason.
  perform baton_private.set_note('lease expired on the last attempt; failed');
  with due as (
    select t.id from public.task_handoffs t
    where t.status = 'in_progress' and t.lease_expires_at < now() and t.attempts >= t.max_attempts
    for update skip locked
  )
  update public.task_handoffs t
  set status = 'failed', status_reason = format('lease expired on the last attempt (%s of %s)', t.attempts, t.max_attempts)
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

  perform baton_private.set_note(null);
  perform set_config('baton.actor', '', true);
  return jsonb_build_object(
    'requeued_silent', silent, 'requeued_unstarted', unstarted, 'requeued_expired', expired,
    'dead_lettered', dead, 'deadline_cancelled', overdue);
end
$$;
comment on function public.sweep_tasks is 'Re-queues claims of silent holders and lapsed leases, fails tasks out of attempts, cancels pending tasks past their deadline. Cheap when nothing is due; safe to run from many daemons at once (SKIP LOCKED). Schedule it with pg_cron on a hosted project: select public.sweep_tasks();';

revoke all on function public.check_claims, public.sweep_tasks from public, anon;
grant execute on function public.check_claims, public.sweep_tasks to authenticated, service_role;

-- The sender hears of every outcome it did not cause itself, as a result message on the task's thread.
create function baton_private.tg_task_handoffs__notify_sender() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  actor text := coalesce(nullif(current_setting('baton.actor', true), ''), baton_private.current_agent_id());
begin
  if new.status in ('completed', 'failed', 'rejected', 'cancelled') and new.status is distinct from old.status
     and actor is distinct from new.from_agent then
    insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
    values (
      coalesce(new.claimed_by, new.to_agent, new.from_agent), new.from_agent, new.id, 'result',
      jsonb_strip_nulls(jsonb_build_object('status', new.status, 'result', new.result, 'reason', new.status_reason))
    );
  end if;
  return null;
end
$$;
create trigger notify_sender after update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__notify_sender();
