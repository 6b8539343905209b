-- A retention pass looks at the oldest finished roots in the order of the index on completed_at, and
-- stops at its limit. With a history that runs up to now (issue 64's bench:history: a million finished
-- tasks over four months, the newest a minute old), the planner misjudged how many tasks are their own
-- root (id = root_task_id) and read the whole table in parallel to sort it instead: 0.7 s of a 1 s pass.
-- Without sorts the pass reads the index in order, as free_capacity does for the same reason.
alter function baton_private.apply_retention() set enable_sort = off;
