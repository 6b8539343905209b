-- A task waiting for an answer no longer counts against its holder's max_concurrent (issue 50).
--
-- An agent that asked a question is not working on the task: it waits for a person or another agent
-- who may take hours or never answer. Counted as held, a few open questions starved the agent (with
-- max_concurrent 8, eight unanswered questions refused every later claim). The task stays claimed by
-- the agent that asked, and when the answer comes it goes on at once, even when the agent has claimed
-- other work meanwhile: max_concurrent bounds new claims, not answers.

create or replace function baton_private.free_capacity(agent text) returns integer
language plpgsql security definer set search_path = '' set enable_sort = off set plan_cache_mode = force_generic_plan
as $$
declare
  cap integer;
  working integer;
begin
  select a.max_concurrent into cap from public.agents a where a.id = agent for no key update;
  -- At most `cap` of the agent's tasks, read through its held index (a pending task has no holder,
  -- task_handoffs_holder_matches_status, so the held ones are these two statuses and input_required).
  select count(*) into working from (
    select from public.task_handoffs t
    where t.claimed_by = agent and t.status in ('claimed', 'in_progress')
    order by t.priority desc, t.created_at
    limit cap) h;
  return greatest(cap - working, 0);
end
$$;

comment on column public.agents.max_concurrent is
  'How many tasks the agent may work on at once (claimed or in progress; a task waiting for an answer does not count). Claims beyond it are refused.';
