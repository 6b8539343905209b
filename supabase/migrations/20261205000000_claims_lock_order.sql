-- One lock order for every RPC that touches claims: the caller's agents row first (FOR NO KEY UPDATE,
-- which foreign keys' key-share locks do not wait for), then its tasks in id order.
--
-- A daemon renews its leases (check_claims with p_renew) while its reporter completes tasks
-- (report_outcomes, report_and_claim). Each updated several rows of task_handoffs, in the order of its
-- own arguments or scan, and neither locked the agent first: two requests of one daemon deadlocked
-- (40P01) on two of its tasks, and the loser's outcome was dropped (test/lock-order.test.ts reproduces
-- it in seconds). Now every such RPC of one agent takes the agent's row first, so they queue behind
-- each other, and multi-row locks of tasks are taken in id order, so requests of different agents
-- that meet on tasks (a sender's cancel, a reassignment, the sweep) never wait in a circle.

-- Every single-task RPC starts here (claim, start, complete, fail, release, decline, progress, ask,
-- answer, cancel, reassign, reject, attach): the caller's row, then the task.
create or replace function baton_private.lock_task(p_task_id uuid, agent text) returns public.task_handoffs
language plpgsql security definer set search_path = ''
as $$
declare
  t public.task_handoffs;
begin
  perform from public.agents a where a.id = agent for no key update;
  select * into t from public.task_handoffs where id = p_task_id for update;
  if not found or not baton_private.can_see_task(t, agent) then
    perform baton_private.task_not_found(p_task_id, agent);
  end if;
  return t;
end
$$;

comment on function baton_private.lock_task is 'Locks a task for a change by `agent`, after the agent''s own row (the one lock order: agent, then tasks by id); not found, or not visible to the agent, is BT002.';

-- A batch of plain completions (report_outcomes): the agent, then its tasks by id, then the update.
create or replace function baton_private.complete_held(agent text, ids uuid[], tokens uuid[], results jsonb[])
returns setof uuid
language plpgsql set search_path = ''
as $$
begin
  perform from public.agents a where a.id = agent for no key update;
  perform from public.task_handoffs t where t.id = any (ids) order by t.id for update;
  return query
    update public.task_handoffs t
    set status = 'completed', result = coalesce(results[array_position(ids, t.id)], '{"status": "success"}'),
        status_reason = null, problems = null
    where t.id = any (ids) and t.claimed_by = agent and t.claim_token = tokens[array_position(ids, t.id)]
      and t.status::text = 'in_progress'
      and not exists (select from jsonb_array_elements(t.expected_outputs) e
                      where coalesce((e ->> 'required')::boolean, true)
                        and not exists (select from public.task_artifacts x where x.task_id = t.id and x.name = e ->> 'name'))
    returning t.id;
end
$$;

comment on function baton_private.complete_held is 'Completes the tasks `agent` holds with the given claim tokens and results, in one update, after locking the agent and then the tasks by id; returns the ids completed (a task not held, not current, not in progress or missing a required output is left for the caller to refuse one by one).';

-- Renewals lock the agent, then the tasks by id, before the update.
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
    perform from public.agents a where a.id = me for no key update;
    perform from public.task_handoffs t where t.id = any (p_task_ids) and t.claimed_by = me order by t.id for update;
    update public.task_handoffs t
    set lease_expires_at = now() + coalesce(t.claim_lease, (baton_private.settings()).default_lease)
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    where t.id = c.id and t.claim_token = c.token and t.claimed_by = me
      and t.status::text in ('claimed', 'in_progress');  -- as text, so that the plan reads the primary key
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
