-- task_counts gives its rows for the final statuses (counted over the last day) only to a caller who
-- may see the agents: an agent, or the operator. A signed-in user who is no agent read four rows of
-- zeros, which told nothing but broke the rule that such a user sees no row of any relation
-- (test/rules.enumerate.test.ts).

create or replace view public.task_counts with (security_invoker = true) as
  select t.status, count(*)::integer as tasks, null::timestamptz as since
  from public.task_handoffs t
  where t.status in ('pending', 'claimed', 'in_progress', 'input_required')
  group by t.status
  union all
  -- Every final status has its row, none finished included, so `since` is always said.
  select f.status, count(t.id)::integer, now() - interval '1 day'
  from unnest('{completed,failed,rejected,cancelled}'::public.task_status[]) f(status)
  left join public.task_handoffs t on t.status = f.status and t.completed_at > now() - interval '1 day'
  where exists (select from public.agents)
  group by f.status;
