-- The quota trigger on tasks asks "is this insert part of a batch?" with built-ins only.
--
-- Its condition was `not baton_private.in_batch()`, a SQL function. Postgres prepares a trigger's
-- condition again for every statement that inserts tasks, and preparing it inlined the function:
-- its body was parsed and planned on every single hand-off (perf put 4.5 % of Postgres's CPU for a
-- hand-off there; see docs/benchmarks.md). The same test, written with built-ins, is prepared
-- without a parse. The batch RPCs set baton.batch to 'on' around their insert, and nothing else
-- read in_batch(), so it goes.

drop trigger step3_quota on public.task_handoffs;

create trigger step3_quota before insert on public.task_handoffs
  for each row when (pg_catalog.current_setting('baton.batch', true) is distinct from 'on')
  execute function baton_private.tg_task_handoffs__quota();

drop function baton_private.in_batch();
