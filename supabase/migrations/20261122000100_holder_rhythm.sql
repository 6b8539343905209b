-- Claims that live as long as their holder does. An agent is heard from on every call it makes that can
-- write (recorded before the request by baton_private.check_request), and it may declare how often it
-- wakes. One rule, baton_private.claim_expires_at, says how long a claim holds: the sweep, check_claims
-- and `baton renew` all read it. Daemons and hand-driven agents on a 15-minute cron are judged alike.

alter table public.agents add column poll_interval interval;
comment on column public.agents.poll_interval is 'How often the agent wakes: a daemon''s schedule, a cron job''s period (baton status --every 15m, the daemon, or an operator). Its claims and its place in discovery survive two missed wake-ups.';
comment on column public.agents.last_heartbeat is 'Server time the agent was last heard from: every call it makes that can write (heartbeat, status, progress, claim, complete, renew, ...) counts. Older than baton_settings.offline_after, or than two of its wake-ups, means offline.';
comment on column public.agents.is_active is 'True once the agent is heard from; a clean stop (a daemon shutting down, or baton status --stopped) sets it false.';

alter table public.task_handoffs add column claim_lease interval;
comment on column public.task_handoffs.claim_lease is 'How long the current claim holds while its holder is unheard: the lease asked for at claim time, else lease_seconds, else baton_settings.default_lease.';
comment on column public.task_handoffs.lease_expires_at is 'When the lease of the current claim, as granted or last renewed, runs out. The claim itself holds longer while its holder keeps being heard from: see baton_private.claim_expires_at.';

-- An agent may say that it is alive and how often it wakes, never when it was last heard from.
create function baton_private.tg_agents__heard_from() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if new.poll_interval is not null and new.poll_interval not between interval '1 second' and interval '7 days' then
    raise exception 'poll_interval must be between 1 second and 7 days, got %', new.poll_interval
      using errcode = 'BT005', hint = 'Say how often the agent wakes, e.g. baton status --every 15m.';
  end if;
  if baton_private.current_agent_id() is not null and new.last_heartbeat is distinct from old.last_heartbeat then
    new.last_heartbeat := now();
  end if;
  return new;
end
$$;
create trigger heard_from before insert or update on public.agents
  for each row execute function baton_private.tg_agents__heard_from();

grant update (poll_interval, last_heartbeat, is_active) on table public.agents to authenticated;

-- Records that an agent was heard from: at most once a second, and never waiting on a concurrent
-- request of the same agent (that one is recording it already).
create function baton_private.record_beat(agent text) returns void
language sql security definer set search_path = ''
as $$
  update public.agents a set last_heartbeat = now(), is_active = true
  where a.id = (
    select b.id from public.agents b
    where b.id = agent and (b.last_heartbeat is null or b.last_heartbeat < now() - interval '1 second' or not b.is_active)
    for no key update skip locked
  )
$$;

-- The one rule for how long a claim holds: while its lease runs, and while its holder keeps being heard
-- from within two of its declared wake-ups, or within the claim's lease if that is longer. A bot on a
-- 15-minute cron loses a claim once it misses two wake-ups (30 minutes), not to a 5-minute lease.
create function baton_private.claim_expires_at(t public.task_handoffs, holder public.agents) returns timestamptz
language sql stable security definer set search_path = ''
as $$
  select greatest(
    t.lease_expires_at,
    holder.last_heartbeat
      + greatest(coalesce(t.claim_lease, (baton_private.settings()).default_lease), 2 * coalesce(holder.poll_interval, interval '0'))
  )
$$;

-- Online: running, and heard from within offline_after or two of its wake-ups, whichever is longer.
create or replace function baton_private.is_online(a public.agents) returns boolean
language sql stable security definer set search_path = ''
as $$
  select coalesce(
    a.is_active
      and a.last_heartbeat > now() - greatest((baton_private.settings()).offline_after, 2 * coalesce(a.poll_interval, interval '0')),
    false)
$$;

-- The view's a.* was fixed when it was created; make it again so that it shows poll_interval.
drop view public.agent_presence;
create view public.agent_presence with (security_invoker = true) as
  select a.*, baton_private.is_online(a) as is_online
  from public.agents a;
comment on view public.agent_presence is 'Every agent with is_online: running and heard from within baton_settings.offline_after (or two of its declared wake-ups). What discovery reads.';
revoke all on public.agent_presence from anon, authenticated;
grant select on public.agent_presence to authenticated, service_role;

drop function public.send_heartbeat(text, boolean);
create function public.send_heartbeat(
  p_status_message text default null,
  p_active boolean default true,
  p_poll_interval interval default null
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
  where a.id = me
  returning a.* into row;
  return row;
end
$$;
comment on function public.send_heartbeat is 'The calling agent says it is alive (server time), optionally with a status line and how often it wakes (p_poll_interval); p_active = false marks a clean stop.';
revoke all on function public.send_heartbeat from public, anon;
grant execute on function public.send_heartbeat to authenticated;

-- check_claims now reports when each claim really lapses, and renews by the claim's own lease.
create or replace function public.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
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
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me and t.status in ('claimed', 'in_progress');
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
comment on function public.check_claims is 'For each of the caller''s claims: is it still current, and until when does it hold (baton_private.claim_expires_at)? With p_renew, restarts the leases of those that are current.';

-- Why a lapsed claim lapsed, in words a sender can act on.
create function baton_private.lapse_reason(t public.task_handoffs, holder public.agents) returns text
language sql stable set search_path = ''
as $$
  select format('holder %s unheard since %s (lease %s%s)',
    t.claimed_by,
    coalesce(to_char(holder.last_heartbeat at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'the claim'),
    coalesce(t.claim_lease, (baton_private.settings()).default_lease),
    case when holder.poll_interval is null then '' else format(', wakes every %s', holder.poll_interval) end)
$$;

create or replace function public.sweep_tasks() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  unstarted integer;
  expired integer;
  dead integer;
  overdue integer;
begin
  -- One sweep at a time is enough: a daemon that finds another one running returns at once.
  if not pg_try_advisory_xact_lock(hashtext('baton.sweep_tasks')) then
    return jsonb_build_object('requeued_unstarted', 0, 'requeued_expired', 0, 'dead_lettered', 0, 'deadline_cancelled', 0);
  end if;
  perform set_config('baton.actor', 'sweep', true);

  -- Every step starts from the lease index: a claim cannot lapse before its lease does.
  -- A claim that lapsed before the work started was no attempt at the work.
  perform baton_private.set_note('claim lapsed before the work started; re-queued');
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'claimed' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'pending', attempts = greatest(t.attempts - 1, 0), status_reason = due.reason || '; not started'
  from due where t.id = due.id;
  get diagnostics unstarted = row_count;

  perform baton_private.set_note('claim lapsed; re-queued');
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'in_progress' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
      and t.attempts < t.max_attempts
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'pending', status_reason = format('%s; re-queued after attempt %s of %s', due.reason, t.attempts, t.max_attempts)
  from due where t.id = due.id;
  get diagnostics expired = row_count;

  -- The dead letter: out of attempts, the task fails for good with the reason.
  perform baton_private.set_note('claim lapsed on the last attempt; failed');
  with due as (
    select t.id, baton_private.lapse_reason(t, a) as reason
    from public.task_handoffs t join public.agents a on a.id = t.claimed_by
    where t.status = 'in_progress' and t.lease_expires_at < now() and baton_private.claim_expires_at(t, a) < now()
      and t.attempts >= t.max_attempts
    for update of t skip locked
  )
  update public.task_handoffs t
  set status = 'failed', status_reason = format('%s; failed on the last attempt (%s of %s)', due.reason, t.attempts, t.max_attempts)
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
    'requeued_unstarted', unstarted, 'requeued_expired', expired, 'dead_lettered', dead, 'deadline_cancelled', overdue);
end
$$;
comment on function public.sweep_tasks is 'Re-queues claims that lapsed by baton_private.claim_expires_at (the holder went unheard for two of its wake-ups, or the lease if longer), fails tasks out of attempts, cancels pending tasks past their deadline. Cheap when nothing is due; safe to run from many daemons at once (SKIP LOCKED). Schedule it with pg_cron on a hosted project: select public.sweep_tasks();';

revoke all on function baton_private.record_beat(text), baton_private.claim_expires_at(public.task_handoffs, public.agents),
  baton_private.lapse_reason(public.task_handoffs, public.agents), baton_private.tg_agents__heard_from()
  from public, anon, authenticated;
