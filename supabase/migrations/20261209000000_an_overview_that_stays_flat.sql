-- The board's overview stays as fast on a history of millions of finished tasks as on an empty one
-- (issue 51, finding 5).
--
-- task_counts counted every task there ever was, by status: at three million finished tasks it took
-- 0.4 s for the operator and 1.1 s for an agent (a scan of the whole table, filtered by row-level
-- security). task_throughput's completed_at filter had no index to use. Now:
--
-- * open tasks (pending, claimed, in progress, waiting for an answer) are counted as before, all of
--   them, read through the open tasks' own partial index: they are the work at hand, few however long
--   the history;
-- * finished tasks are counted over the last day (`since` says from when): what a person watching
--   the board asks is what ended lately, and an all-time total of finished work grows without bound.
--   (Studio's table editor, or a count of task_handoffs, still gives the all-time total.)
--
-- One index on completed_at serves both views and retention, in place of retention's index of finished
-- roots: the same number of indexes to keep up on every change of status.

create index task_handoffs_finished_idx on public.task_handoffs (completed_at) where completed_at is not null;
drop index public.task_handoffs_finished_roots_idx;

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
  group by f.status;

comment on view public.task_counts is
  'Tasks by status, with the caller''s rights: every open task, and the tasks that finished since `since` (the last day). The board''s overview reads it.';
