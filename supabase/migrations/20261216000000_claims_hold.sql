-- How long a claim still holds, as the database reckons it (issue 72). A daemon cut off from the API
-- stops its executors a margin before their claims could lapse; it estimated that hold itself, from the
-- claim's lease and its own wake-ups, as claim_expires_at reckons it: two copies of one rule, and the
-- copy did not know that a task waiting for an answer never lapses. check_claims now also answers
-- hold_seconds: how long from now the claim holds (claim_expires_at less now(), a duration on the
-- database's clock, so a daemon adds it to its own without minding skew); null where it does not lapse
-- (a question waiting) or is not the caller's. Its result gains a column, so it is made anew; callers
-- that read only the first four go on as before.

drop function public.check_claims(uuid[], uuid[], boolean);
drop function baton_private.check_claims(uuid[], uuid[], boolean);

create function baton_private.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
returns table (task_id uuid, status public.task_status, current boolean, lease_expires_at timestamptz, hold_seconds double precision)
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
    select c.id, t.status, k.current, k.until,
           case when k.current and t.status in ('claimed', 'in_progress')
                then greatest(extract(epoch from k.until - now()), 0)::double precision end
    from unnest(p_task_ids, p_claim_tokens) as c(id, token)
    left join public.task_handoffs t on t.id = c.id and baton_private.can_see_task(t, me)
    left join public.agents a on a.id = t.claimed_by
    cross join lateral (
      select coalesce(t.claimed_by = me and t.claim_token = c.token and t.status in ('claimed', 'in_progress', 'input_required')
                      and (process is null or t.claim_incarnation is not distinct from process), false) as current,
             case when t.status in ('claimed', 'in_progress') then baton_private.claim_expires_at(t, a) else t.lease_expires_at end as until
    ) k;
end
$$;
revoke all on function baton_private.check_claims(uuid[], uuid[], boolean) from public, anon;
grant execute on function baton_private.check_claims(uuid[], uuid[], boolean) to authenticated, service_role;
comment on function baton_private.check_claims(uuid[], uuid[], boolean) is 'For each of the caller''s claims: is it still current, until when does it hold (baton_private.claim_expires_at), and for how many seconds from now (hold_seconds; null for a task waiting for an answer, which does not lapse)? With p_renew, restarts the leases of those that are current.';

create function public.check_claims(p_task_ids uuid[], p_claim_tokens uuid[], p_renew boolean default false)
returns table (task_id uuid, status public.task_status, current boolean, lease_expires_at timestamptz, hold_seconds double precision)
language plpgsql security invoker set search_path = ''
as $$begin return query select * from baton_private.check_claims($1, $2, $3); end$$;
revoke all on function public.check_claims(uuid[], uuid[], boolean) from public, anon;
grant execute on function public.check_claims(uuid[], uuid[], boolean) to authenticated, service_role;
comment on function public.check_claims(uuid[], uuid[], boolean) is 'For each of the caller''s claims: is it still current, until when does it hold (baton_private.claim_expires_at), and for how many seconds from now (hold_seconds; null for a task waiting for an answer, which does not lapse)? With p_renew, restarts the leases of those that are current.';
