-- Incarnations: a claim belongs to the process that made it, not only to the agent's id. A daemon
-- starting under an identity says so (begin_incarnation), and by that one call every claim an earlier
-- process of the identity left is handed back at once, by the same rule that hands back a lapsed claim.
-- Without it, a daemon restarted by systemd or Docker beats under the same id, its dead process's claims
-- look alive, and they wait (and take up its max_concurrent) for as long as the new process stays busy.
-- Agents driven by hand or by cron never begin one unless they ask (baton status --restarted): their
-- claims follow their rhythm as before.

alter table public.agents add column incarnation uuid;
alter table public.agents add column incarnation_started_at timestamptz;
comment on column public.agents.incarnation is 'The process running as this agent now: set when a daemon starts (begin_incarnation), which hands back every claim an earlier process left. A heartbeat naming another incarnation is refused (BT016): that process was superseded.';
comment on column public.agents.incarnation_started_at is 'When the current incarnation began (server time).';

-- The view's a.* was fixed when it was made; make it again so that it shows the new columns.
drop view public.agent_presence;
create view public.agent_presence with (security_invoker = true) as
  select a.*, baton_private.is_online(a) as is_online
  from public.agents a;
comment on view public.agent_presence is 'Every agent with is_online: running and heard from within baton_settings.offline_after (or two of its declared wake-ups). What discovery reads.';
revoke all on public.agent_presence from anon, authenticated;
grant select on public.agent_presence to authenticated, service_role;

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

create function public.begin_incarnation() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  fresh uuid := gen_random_uuid();
  ids uuid[];
  reasons text[];
begin
  -- The agent's row is the lock: two processes starting at once take turns, and the later one wins.
  update public.agents
  set incarnation = fresh, incarnation_started_at = now(), last_heartbeat = now(), is_active = true
  where id = me;

  select coalesce(array_agg(t.id), '{}'),
         coalesce(array_agg(format('holder %s restarted at %s; the claim of its earlier process was handed back',
           me, to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))), '{}')
  into ids, reasons
  from (
    select t.id from public.task_handoffs t
    where t.claimed_by = me and t.status in ('claimed', 'in_progress')
    order by t.id
    for update
  ) t;

  return jsonb_build_object('incarnation', fresh)
    || baton_private.hand_back_lost_claims(ids, reasons, 'holder restarted');
end
$$;
comment on function public.begin_incarnation is 'A new process starts as the calling agent: records a new incarnation and hands back every claim the agent held (never started: pending without counting an attempt; in progress: pending after its attempt, or failed on the last), with the reason in the history. Daemons call it on start; hand-driven agents with baton status --restarted. Returns {incarnation, requeued_unstarted, requeued_expired, dead_lettered}.';
revoke all on function public.begin_incarnation from public, anon;
grant execute on function public.begin_incarnation to authenticated;

-- A heartbeat may name the process it comes from; a process that another one superseded is told so.
drop function public.send_heartbeat(text, boolean, interval);
create function public.send_heartbeat(
  p_status_message text default null,
  p_active boolean default true,
  p_poll_interval interval default null,
  p_incarnation uuid default null
) returns public.agents
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  row public.agents;
begin
  update public.agents a
  set last_heartbeat = now(),
      is_active = coalesce(p_active, true),
      status_message = coalesce(p_status_message, a.status_message),
      poll_interval = coalesce(p_poll_interval, a.poll_interval)
  where a.id = me and (p_incarnation is null or a.incarnation is not distinct from p_incarnation)
  returning a.* into row;
  if row.id is null then
    select a.* into row from public.agents a where a.id = me;
    raise exception 'agent % is run by a newer process now (since %); this process was superseded', me, row.incarnation_started_at
      using errcode = 'BT016', hint = 'Stop this process: a process started later as the same agent took over its claims. Run one daemon per agent.';
  end if;
  return row;
end
$$;
comment on function public.send_heartbeat is 'The calling agent says it is alive (server time), optionally with a status line and how often it wakes (p_poll_interval); p_active = false marks a clean stop. With p_incarnation, refused (BT016) when a later process of the same agent began since: the caller was superseded.';
revoke all on function public.send_heartbeat from public, anon;
grant execute on function public.send_heartbeat to authenticated;

-- The sweep hands back lapsed claims by the same rule, and says whether pg_cron runs it, so that daemons
-- leave the sweep to pg_cron where it does.
create or replace function public.sweep_tasks() returns jsonb
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
comment on function public.sweep_tasks is 'Re-queues claims that lapsed (the holder went unheard for two of its wake-ups, or the lease if longer), fails tasks out of attempts, cancels pending tasks past their deadline, makes the tasks of due recurring hand-offs (one per slot) and deletes finished chains past baton_settings.keep_finished. Cheap when nothing is due; one sweep runs at a time however many daemons call it. "scheduled" says whether pg_cron runs it (job baton-sweep), in which case daemons leave it to pg_cron. Schedule it with pg_cron on a hosted project: select public.sweep_tasks();';
