-- A task's chain, for the context an executor receives: whoever may see a task may see the tasks it was
-- handed off within (their results are its inputs), even where it could not see them otherwise.

-- The ids of the tasks a task was handed off within, with how far up each is (1 = the parent).
create function baton_private.ancestor_ids(p_task_id uuid) returns table (id uuid, distance integer)
language sql stable set search_path = ''
as $$
  with recursive chain (id, parent_id, distance) as (
    select p.id, p.parent_task_id, 1 from public.task_handoffs p
    where p.id = (select t.parent_task_id from public.task_handoffs t where t.id = p_task_id)
    union all
    select p.id, p.parent_task_id, c.distance + 1 from public.task_handoffs p join chain c on p.id = c.parent_id
  )
  select chain.id, chain.distance from chain
$$;

create function public.task_ancestors(p_task_id uuid) returns setof public.task_handoffs
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
begin
  return query
    select p.* from baton_private.ancestor_ids(t.id) c join public.task_handoffs p on p.id = c.id order by c.distance;
end
$$;
comment on function public.task_ancestors is 'The tasks a task was handed off within, nearest first, for anyone who may see the task.';
revoke all on function public.task_ancestors from public, anon;
grant execute on function public.task_ancestors to authenticated;
