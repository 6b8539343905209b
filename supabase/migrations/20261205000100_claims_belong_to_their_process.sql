-- A claim belongs to the process that made it, in the database.
--
-- A daemon runs as an incarnation of its agent (begin_incarnation). Until now the claims it made were
-- the agent's, not the process's: a process that a later one had superseded, cut off and then heard
-- again, released its successor's running claims with tokens it had just read back; a daemon released
-- claims the agent had made by hand beside it; and a superseded process's claim lived as long as any
-- process of the agent was heard (test/faults.test.ts shows each).
--
-- Now a daemon names its incarnation on every request (the header X-Baton-Incarnation, which PostgREST
-- hands the database as request.headers). A claim records the incarnation that made it
-- (task_handoffs.claim_incarnation; null for a claim made by hand: the CLI, a script, an MCP host).
--   - A request naming an incarnation that is no longer the agent's current one cannot claim (BT016).
--   - A request naming an incarnation acts only on that incarnation's claims: it cannot renew, report,
--     release or decline any other claim (BT007), not even one made by hand. A request naming none
--     (the hand) is fenced by the claim token alone, as before.
--   - A claim whose incarnation was superseded holds only until its lease ends: the beats of another
--     process of the agent no longer keep it alive.
--   - begin_incarnation tells the agent's topic at once, so a superseded process listening there stops
--     without waiting for its next heartbeat to be refused. The work it hands back may be claimed again
--     only after one of the agent's wake-ups (at most 10 s): an earlier process still alive (started
--     twice by mistake, or restarted by a supervisor that thought it dead) looks at its claims that
--     often and stops their executors, so two holders never run one task at once.

alter table public.task_handoffs add column claim_incarnation uuid;

comment on column public.task_handoffs.claim_incarnation is 'The process (agents.incarnation) that made the current claim, when a daemon made it; null for a claim made by hand (CLI, script, MCP host). A request naming an incarnation acts only on its own claims, and a claim whose incarnation was superseded holds only until its lease ends.';

-- The incarnation a request names, if any.
create function baton_private.request_incarnation() returns uuid
language plpgsql stable set search_path = ''
as $$
declare
  said text := nullif(pg_catalog.current_setting('request.headers', true), '')::json ->> 'x-baton-incarnation';
begin
  if said is null then
    return null;
  end if;
  if said !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    raise exception 'X-Baton-Incarnation must be the UUID begin_incarnation() returned, got "%"', left(said, 80)
      using errcode = 'BT005', hint = 'Send the incarnation this process began as, or no X-Baton-Incarnation header when acting by hand.';
  end if;
  return said::uuid;
end
$$;

revoke all on function baton_private.request_incarnation() from public, anon, authenticated;

comment on function baton_private.request_incarnation is 'The incarnation the request names in its X-Baton-Incarnation header (a daemon names the one it began as), or null for a request made by hand; a malformed one is BT005.';

-- A request's incarnation, refused (BT016) if a later process of the agent began since.
create function baton_private.check_incarnation(agent text) returns uuid
language plpgsql stable security definer set search_path = ''
as $$
declare
  mine uuid := baton_private.request_incarnation();
  current_one uuid;
  since timestamptz;
begin
  if mine is not null then
    select a.incarnation, a.incarnation_started_at into current_one, since from public.agents a where a.id = agent;
    if current_one is distinct from mine then
      raise exception 'agent % is run by a newer process now (since %); this process was superseded', agent, since
        using errcode = 'BT016', hint = 'Stop this process: a process started later as the same agent took over its claims. Run one daemon per agent.';
    end if;
  end if;
  return mine;
end
$$;

revoke all on function baton_private.check_incarnation(text) from public, anon, authenticated;

comment on function baton_private.check_incarnation is 'The incarnation the request names (null by hand), after checking that it is still the agent''s current one (else BT016: superseded).';

-- Every claim (claim_task, claim_next_tasks, report_and_claim) records its process. It runs after the
-- claim locked the agent's row, which begin_incarnation updates: a process superseded meanwhile is refused.
create or replace function baton_private.mark_claimed(ids uuid[], agent text, lease interval, start boolean)
returns void
language plpgsql set search_path = ''
as $$
declare
  held interval := coalesce(lease, (baton_private.settings()).default_lease);
  process uuid := baton_private.check_incarnation(agent);
begin
  update public.task_handoffs
  set status = case when start then 'in_progress'::public.task_status else 'claimed' end,
      claimed_by = agent, claim_token = gen_random_uuid(), claim_incarnation = process,
      attempts = attempts + 1, not_before = null,
      claim_lease = coalesce(lease, make_interval(secs => lease_seconds), held),
      lease_expires_at = now() + coalesce(lease, make_interval(secs => lease_seconds), held)
  where id = any (ids);
end
$$;

-- Start, complete, fail, release, decline (and ask, attach, progress, which pass the task's own token):
-- a process that names itself acts only on its own claims.
create or replace function baton_private.check_holder(t public.task_handoffs, agent text, p_claim_token uuid)
returns void
language plpgsql stable set search_path = ''
as $$
declare
  process uuid := baton_private.request_incarnation();
begin
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    raise exception 'task % is already %', t.id, t.status
      using errcode = 'BT001', hint = 'A final task cannot change; hand off a new one if work remains.';
  end if;
  if t.claimed_by is distinct from agent then
    raise exception 'task % is %, and agent "%" does not hold it', t.id,
      case when t.claimed_by is null then t.status::text else format('held by "%s"', t.claimed_by) end, agent
      using errcode = 'BT003', hint = 'Only the agent holding a task can report on it; claim it first.';
  end if;
  if p_claim_token is distinct from t.claim_token then
    raise exception 'the claim presented for task % is no longer current', t.id
      using errcode = 'BT007',
            hint = 'The task was released or re-claimed since that claim; drop this outcome.';
  end if;
  if process is not null and t.claim_incarnation is distinct from process then
    raise exception 'the claim on task % was made %, not by this process of agent "%"', t.id,
      case when t.claim_incarnation is null then 'by hand' else 'by another process' end, agent
      using errcode = 'BT007',
            hint = 'A claim belongs to the process that made it: leave this task to it.';
  end if;
end
$$;

-- Batched completions: the same rule.
create or replace function baton_private.complete_held(agent text, ids uuid[], tokens uuid[], results jsonb[])
returns setof uuid
language plpgsql set search_path = ''
as $$
declare
  process uuid := baton_private.request_incarnation();
begin
  perform from public.agents a where a.id = agent for no key update;
  perform from public.task_handoffs t where t.id = any (ids) order by t.id for update;
  return query
    update public.task_handoffs t
    set status = 'completed', result = coalesce(results[array_position(ids, t.id)], '{"status": "success"}'),
        status_reason = null, problems = null
    where t.id = any (ids) and t.claimed_by = agent and t.claim_token = tokens[array_position(ids, t.id)]
      and (process is null or t.claim_incarnation is not distinct from process)
      and t.status::text = 'in_progress'
      and not exists (select from jsonb_array_elements(t.expected_outputs) e
                      where coalesce((e ->> 'required')::boolean, true)
                        and not exists (select from public.task_artifacts x where x.task_id = t.id and x.name = e ->> 'name'))
    returning t.id;
end
$$;

-- A process renews only its own claims, and only those are current for it.
create or replace function public.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
returns table (task_id uuid, status public.task_status, current boolean, lease_expires_at timestamptz)
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  process uuid := baton_private.request_incarnation();
begin
  if cardinality(p_task_ids) is distinct from cardinality(p_claim_tokens) then
    raise exception 'give one claim token for each task id' using errcode = 'BT005', hint = 'Pass the two arrays in the same order.';
  end if;
  if p_renew then
    perform from public.agents a where a.id = me for no key update;
    perform from public.task_handoffs t where t.id = any (p_task_ids) and t.claimed_by = me order by t.id for update;
    update public.task_handoffs t
    set lease_expires_at = now() + coalesce(t.claim_lease, (baton_private.settings()).default_lease)
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me
      and (process is null or t.claim_incarnation is not distinct from process)
      and t.status::text in ('claimed', 'in_progress');  -- as text, so that the plan reads the primary key
  end if;
  return query
    select c.id, t.status,
           coalesce(t.claimed_by = me and t.claim_token = c.token and t.status in ('claimed', 'in_progress', 'input_required')
                    and (process is null or t.claim_incarnation is not distinct from process), false),
           case when t.status in ('claimed', 'in_progress') then baton_private.claim_expires_at(t, a) else t.lease_expires_at end
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    left join public.task_handoffs t on t.id = c.id and baton_private.can_see_task(t, me)
    left join public.agents a on a.id = t.claimed_by;
end
$$;

-- A superseded process's claim holds only until its lease ends; the agent's beats (another process's)
-- keep only the current process's claims and the hand's alive.
create or replace function baton_private.claim_expires_at(t public.task_handoffs, holder public.agents)
returns timestamptz
language sql stable security definer set search_path = ''
as $$
  select case
    when t.claim_incarnation is not null and t.claim_incarnation is distinct from holder.incarnation then t.lease_expires_at
    else greatest(
      t.lease_expires_at,
      holder.last_heartbeat
        + greatest(coalesce(t.claim_lease, (baton_private.settings()).default_lease), 2 * coalesce(holder.poll_interval, interval '0')))
  end
$$;

create or replace function baton_private.lapse_reason(t public.task_handoffs, holder public.agents)
returns text
language sql stable set search_path = ''
as $$
  select case
    when t.claim_incarnation is not null and t.claim_incarnation is distinct from holder.incarnation then
      format('holder %s: the process that claimed it was superseded at %s, and its lease (%s) ended',
        t.claimed_by,
        coalesce(to_char(holder.incarnation_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'a restart'),
        coalesce(t.claim_lease, (baton_private.settings()).default_lease))
    else format('holder %s unheard since %s (lease %s%s)',
      t.claimed_by,
      coalesce(to_char(holder.last_heartbeat at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'the claim'),
      coalesce(t.claim_lease, (baton_private.settings()).default_lease),
      case when holder.poll_interval is null then '' else format(', wakes every %s', holder.poll_interval) end)
  end
$$;

-- A new process tells the agent's topic at once: the process it supersedes, listening there, stops.
create or replace function public.begin_incarnation() returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  fresh uuid := gen_random_uuid();
  ids uuid[];
  reasons text[];
  handed_back jsonb;
  claimable_at timestamptz;
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

  perform realtime.send(jsonb_build_object('incarnation', fresh, 'started_at', now()), 'incarnation', 'agent:' || me, true);

  handed_back := baton_private.hand_back_lost_claims(ids, reasons, 'holder restarted');
  -- Listeners heard of the work as it went back; they hear when it may be claimed too.
  select now() + least(coalesce(a.poll_interval, interval '5 seconds'), interval '10 seconds') + interval '1 second'
  into claimable_at from public.agents a where a.id = me;
  update public.task_handoffs t set not_before = claimable_at
  where t.id = any (ids) and t.status = 'pending';
  perform realtime.send(jsonb_build_object('tasks', jsonb_agg(jsonb_build_object('id', d.id, 'status', 'pending', 'not_before', d.not_before))),
                        'work', d.topic, true)
  from (select t.id, t.not_before, baton_private.work_topic(t.to_agent, t.required_capabilities) as topic
        from public.task_handoffs t where t.id = any (ids) and t.status = 'pending') d
  group by d.topic;
  return jsonb_build_object('incarnation', fresh,
                            'claimable_at', case when cardinality(ids) > 0 then claimable_at end) || handed_back;
end
$$;

comment on function public.begin_incarnation is 'A new process starts as the calling agent: records a new incarnation, tells the agent''s topic (event incarnation), and hands back every claim the agent held (never started: pending without counting an attempt; in progress: pending after its attempt, or failed on the last), with the reason in the history; what it hands back may be claimed again after one of the agent''s wake-ups (at most 10 s), by when an earlier process still alive has stopped its executors. Daemons call it on start; hand-driven agents with baton status --restarted. Returns {incarnation, claimable_at (when what it handed back may be claimed; null if nothing), requeued_unstarted, requeued_expired, dead_lettered}.';
