-- Claims that keep one plan, whatever the statistics say.
--
-- * A queue's statistics are usually out of date: autovacuum analyzes task_handoffs at whatever moment
--   it gets to it, often when the queue was nearly empty. With an empty queue in the statistics, every
--   partial index of open tasks looks equally cheap, and a claim could read its broadcasts through
--   task_handoffs_open_from_agent_idx (every open task of every sender) instead of its own queue's
--   index: seen at 710 open tasks read and checked against task_declines per claim of 10. That index now
--   also names the sender, so only a query that names one (the open-task quota's recount) can use it.
-- * claim_next_tasks runs on its generic plans. PostgreSQL chose custom plans for some of its
--   statements and planned them again on every call; the generic plans read the same indexes (each
--   queue's own, the addressed tasks' own, task_handoffs_pkey for the claimed ids). Measured without
--   HTTP, 10 tasks per claim: 1.15-1.22 → 0.96-1.07 ms of Postgres CPU per claim and completion.

drop index public.task_handoffs_open_from_agent_idx;
create index task_handoffs_open_from_agent_idx on public.task_handoffs (from_agent)
  where status in ('pending', 'claimed', 'in_progress', 'input_required') and from_agent is not null;
comment on index public.task_handoffs_open_from_agent_idx is
  'Open tasks by sender, for the open-task quota. It names the sender so that a claim, which names none, cannot read every open task through it.';

alter function public.claim_next_tasks(integer, text[], integer, boolean) set plan_cache_mode = force_generic_plan;
