-- The sweep: what happens to work nobody is doing. Claims whose holder went silent or whose lease ran
-- out go back to pending (or fail for good on their last attempt), pending tasks past their deadline
-- are cancelled, recurring hand-offs fire and retention runs (workflows). Daemons share the sweep (any
-- one may run it; each is cheap when there is nothing to do), and where pg_cron exists the database
-- runs it every minute by itself.

create index task_handoffs_deadlines_idx on public.task_handoffs (deadline)
  where status = 'pending' and deadline is not null;

-- The sweep hands back lapsed claims by the same rule, and says whether pg_cron runs it, so that daemons
-- leave the sweep to pg_cron where it does.
create function public.sweep_tasks() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  lost jsonb;
  overdue integer;
  recurring integer;
  removed integer;
  scheduled boolean := false;
begin
  if to_regclass('cron.job') is not null then
    execute 'select exists (select 1 from cron.job where jobname = ''baton-sweep'' and active)' into scheduled;
  end if;
  if not pg_try_advisory_xact_lock(hashtext('baton.sweep_tasks')) then
    return jsonb_build_object('requeued_unstarted', 0, 'requeued_expired', 0, 'dead_lettered', 0, 'deadline_cancelled', 0,
                              'recurring_created', 0, 'retention_deleted', 0, 'scheduled', scheduled);
  end if;
  perform set_config('baton.actor', 'sweep', true);

  with due as (
    select l.id, l.reason from baton_private.lapsed_claims('claimed') l
    union all
    select l.id, l.reason from baton_private.lapsed_claims('in_progress') l
  )
  select baton_private.hand_back_lost_claims(coalesce(array_agg(due.id), '{}'), coalesce(array_agg(due.reason), '{}'), 'claim lapsed')
  into lost from due;

  perform baton_private.set_note('deadline passed');
  with due as (select o.id from baton_private.overdue_tasks() o)
  update public.task_handoffs t set status = 'cancelled', status_reason = 'deadline passed'
  from due where t.id = due.id;
  get diagnostics overdue = row_count;

  perform baton_private.set_note('made by its schedule');
  recurring := baton_private.run_recurring();
  perform baton_private.set_note(null);
  removed := baton_private.apply_retention();

  perform set_config('baton.actor', '', true);
  return lost || jsonb_build_object('deadline_cancelled', overdue, 'recurring_created', recurring,
    'retention_deleted', removed, 'scheduled', scheduled);
end
$$;

revoke all on function public.sweep_tasks from public, anon;
grant execute on function public.sweep_tasks to authenticated, service_role;

comment on function public.sweep_tasks is 'Re-queues claims that lapsed (the holder went unheard for two of its wake-ups, or the lease if longer), fails tasks out of attempts, cancels pending tasks past their deadline, makes the tasks of due recurring hand-offs (one per slot) and deletes finished chains past baton_settings.keep_finished. Cheap when nothing is due; one sweep runs at a time however many daemons call it. "scheduled" says whether pg_cron runs it (job baton-sweep), in which case daemons leave it to pg_cron. Schedule it with pg_cron on a hosted project: select public.sweep_tasks();';

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
    set lease_expires_at = now() + coalesce(t.claim_lease, (baton_private.settings()).default_lease)
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me
      and t.status::text in ('claimed', 'in_progress');  -- as text: see above
  end if;
  return query
    select c.id, t.status,
           coalesce(t.claimed_by = me and t.claim_token = c.token and t.status in ('claimed', 'in_progress', 'input_required'), false),
           case when t.status in ('claimed', 'in_progress') then baton_private.claim_expires_at(t, a) else t.lease_expires_at end
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    left join public.task_handoffs t on t.id = c.id and baton_private.can_see_task(t, me)
    left join public.agents a on a.id = t.claimed_by;
end
$$;

revoke all on function public.check_claims from public, anon;
grant execute on function public.check_claims to authenticated, service_role;

comment on function public.check_claims is 'For each of the caller''s claims: is it still current, and until when does it hold (baton_private.claim_expires_at)? With p_renew, restarts the leases of those that are current.';

-- The sweep's searches. Each reads its own index (leases, deadlines) in that index's order, with
-- sorting disabled, in a helper of its own so that the setting does not reach the triggers the sweep's
-- updates fire: left to statistics taken while little was pending, the planner read every open task
-- through task_handoffs_open_from_agent_idx, and behind a backlog of 60,000 a sweep took 150-200 ms.

-- Claims in `held_status` that lapsed, locked (skipping those locked elsewhere), with why they lapsed
-- and whether the task was on its last attempt.
create function baton_private.lapsed_claims(held_status public.task_status)
returns table (id uuid, reason text, last_attempt boolean)
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
rows 10
as $$
begin
  return query
    select t.id, baton_private.lapse_reason(t, a), t.attempts >= t.max_attempts
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    -- The literal statuses let task_handoffs_leases_idx serve whichever one is asked for.
    where t.status in ('claimed', 'in_progress') and t.status = held_status
      and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
    order by t.lease_expires_at
    for update of t skip locked;
end
$$;

revoke all on function baton_private.lapsed_claims(public.task_status) from public, anon, authenticated;

-- The one rule for a claim its holder lost (its lease lapsed unheard, or its process is gone): a claim
-- never started goes back without counting an attempt; one in progress counts its attempt and goes back
-- while attempts remain, else fails for good (the dead letter). `what` starts the history's note;
-- each task's reason says why in words a sender can act on (reasons[i] for ids[i]). The caller has locked
-- the rows. Each is found by its primary key whatever the statistics say, never by a scan of the table.
create function baton_private.hand_back_lost_claims(ids uuid[], reasons text[], what text) returns jsonb
language plpgsql set search_path = '' set enable_seqscan = off
as $$
declare
  unstarted integer := 0;
  expired integer := 0;
  dead integer := 0;
begin
  if cardinality(ids) > 0 then
    perform baton_private.set_note(what || ' before the work started; re-queued');
    update public.task_handoffs t
    set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = reasons[array_position(ids, t.id)] || '; not started'
    where t.id = any (ids) and t.status = 'claimed';
    get diagnostics unstarted = row_count;

    perform baton_private.set_note(what || '; re-queued');
    update public.task_handoffs t
    set status = 'pending',
        status_reason = format('%s; re-queued after attempt %s of %s', reasons[array_position(ids, t.id)], t.attempts, t.max_attempts)
    where t.id = any (ids) and t.status = 'in_progress' and t.attempts < t.max_attempts;
    get diagnostics expired = row_count;

    perform baton_private.set_note(what || ' on the last attempt; failed');
    update public.task_handoffs t
    set status = 'failed',
        status_reason = format('%s; failed on the last attempt (%s of %s)', reasons[array_position(ids, t.id)], t.attempts, t.max_attempts)
    where t.id = any (ids) and t.status = 'in_progress' and t.attempts >= t.max_attempts;
    get diagnostics dead = row_count;

    perform baton_private.set_note(null);
  end if;
  return jsonb_build_object('requeued_unstarted', unstarted, 'requeued_expired', expired, 'dead_lettered', dead);
end
$$;

revoke all on function baton_private.hand_back_lost_claims(uuid[], text[], text) from public, anon, authenticated;

-- Pending tasks past their deadline, locked (skipping those locked elsewhere).
create function baton_private.overdue_tasks() returns table (id uuid)
language plpgsql set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
rows 10
as $$
begin
  return query
    select t.id from public.task_handoffs t
    where t.status = 'pending' and t.deadline < now()
    order by t.deadline
    for update skip locked;
end
$$;

revoke all on function baton_private.overdue_tasks() from public, anon, authenticated;

-- Where pg_cron exists (hosted Supabase, once it is enabled), the database sweeps itself every minute,
-- so that dropped claims are re-queued and overdue tasks cancelled even when no daemon is running.
-- Where it does not (the embedded stack, a bare Postgres), nothing changes: daemons and `baton sweep`
-- do it. Scheduling by name replaces an earlier job of the same name, so this is safe to run again.
create function baton_private.schedule_sweep() returns text
language plpgsql set search_path = ''
as $$
begin
  if not exists (select from pg_catalog.pg_extension where extname = 'pg_cron') then
    if exists (select from pg_catalog.pg_available_extensions where name = 'pg_cron')
       and pg_catalog.current_setting('shared_preload_libraries', true) like '%pg_cron%' then
      create extension pg_cron;
    else
      return 'pg_cron is not installed here; the daemons (or `baton sweep` from cron) sweep instead';
    end if;
  end if;
  perform cron.schedule('baton-sweep', '* * * * *', 'select public.sweep_tasks()');
  return 'scheduled "baton-sweep" every minute with pg_cron';
end
$$;

revoke all on function baton_private.schedule_sweep() from public, anon, authenticated, service_role;

comment on function baton_private.schedule_sweep is 'Schedules sweep_tasks every minute with pg_cron where it exists (enabling it where it is preloaded), and says what it did. Run it again after enabling pg_cron on a project that did not have it.';

do $$
begin
  raise notice '%', baton_private.schedule_sweep();
end
$$;
