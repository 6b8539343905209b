-- Lineage: a task's parent, root and depth (set when it is handed off within another), the chain
-- above and below a task, the inputs it may read, and follow-ups. Who may see a task through its
-- lineage follows who works on it now (works_on): a holder moved off a task stops seeing it, even
-- through a child it handed to itself.

create index task_handoffs_parent_idx on public.task_handoffs (parent_task_id) where parent_task_id is not null;

create index task_handoffs_root_idx on public.task_handoffs (root_task_id);

-- The lineage shows what each task waited for, so a diamond reads as one.
create view public.task_lineage with (security_invoker = true) as
  select t.id, t.root_task_id, t.parent_task_id, t.depth, t.title, t.status, t.status_reason,
         t.from_agent, t.to_agent, t.required_capabilities, t.claimed_by as producer, t.attempts, t.progress_message, t.progress_percent,
         t.created_at, t.started_at, t.completed_at,
         t.input_artifacts as inputs,
         coalesce((
           select jsonb_agg(jsonb_build_object('name', a.name, 'media_type', a.media_type, 'size_bytes', a.size_bytes,
                                               'sha256', a.sha256, 'uri', a.uri, 'producer', a.producer) order by a.name)
           from public.task_artifacts a where a.task_id = t.id), '[]') as outputs,
         t.result -> 'status' as result_status,
         t.result ->> 'summary' as summary,
         t.depends_on,
         t.dependency_mode
  from public.task_handoffs t;

revoke all on public.task_lineage from anon, authenticated;
grant select on public.task_lineage to authenticated, service_role;

comment on view public.task_lineage is 'Every task with its place in its chain, producer, inputs, outputs (artifact names, sizes, hashes), status and times. Filter by root_task_id to see one chain.';

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
  worker boolean := baton_private.works_on(t, me);
begin
  return query
    select p.* from baton_private.ancestor_ids(t.id) c join public.task_handoffs p on p.id = c.id
    where worker or baton_private.can_see_task(p, me)
    order by c.distance;
end
$$;

revoke all on function public.task_ancestors from public, anon;
grant execute on function public.task_ancestors to authenticated;

comment on function public.task_ancestors is 'The tasks a task was handed off within, nearest first: all of them for whoever works on the task, else those the caller may see itself.';

-- The chain of a task: its ancestors, what it led to, and what waits on it. What the task led to follows
-- dependency edges too (a task that depends on one in the chain is part of what it led to), so a diamond shows
-- whole; whoever works on the task also gets what it depends on, as it gets its ancestors.
create function public.task_chain(p_task_id uuid) returns setof public.task_lineage
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  context uuid[];
begin
  with recursive below (id) as (
    select t.id
    union
    select c.id from below b cross join lateral (
      select x.id from public.task_handoffs x where x.parent_task_id = b.id
      union all
      select x.id from public.task_handoffs x where x.depends_on <> '{}' and x.depends_on @> array[b.id]
    ) c
  )
  select array(select id from below) into context;
  if baton_private.works_on(t, me) then
    with recursive above (id) as (
      select t.id
      union
      select u.id from above a cross join lateral (
        select p.parent_task_id as id from public.task_handoffs p where p.id = a.id and p.parent_task_id is not null
        union all
        select unnest(p.depends_on) from public.task_handoffs p where p.id = a.id
      ) u
    )
    select context || array(select id from above) into context;
  end if;
  return query
    select l.* from public.task_lineage l join public.task_handoffs s on s.id = l.id
    where s.id = any (context) or (l.root_task_id = t.root_task_id and baton_private.can_see_task(s, me))
    order by l.depth, l.created_at;
end
$$;

revoke all on function public.task_chain from public, anon;
grant execute on function public.task_chain to authenticated;

comment on function public.task_chain is 'The chain of a task the caller may see, as task_lineage rows: what the task led to, the tasks the caller may see itself, and the ancestors of a task it works on.';

-- Inputs: the artifacts named as its inputs, and those of the tasks it depends on.
create function public.task_inputs(p_task_id uuid) returns setof public.task_artifacts
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
  worker boolean := baton_private.works_on(t, me);
begin
  return query
    select a.* from public.task_artifacts a join public.task_handoffs s on s.id = a.task_id
    where (a.task_id in (select c.id from baton_private.ancestor_ids(t.id) c)
           or a.task_id = any (t.depends_on)
           or exists (
             select from jsonb_array_elements(t.input_artifacts) i
             where (i ->> 'task_id')::uuid = a.task_id and i ->> 'name' = a.name
           ))
      and (worker or a.task_id = any (t.depends_on) or baton_private.can_see_task(s, me))
    order by a.created_at;
end
$$;

revoke all on function public.task_inputs from public, anon;
grant execute on function public.task_inputs to authenticated;

comment on function public.task_inputs is 'The artifacts a task works from: its named inputs, its parent chain''s and those of the tasks it depends on. All of them for whoever works on the task; for others, those on tasks they may see and the dependencies''.';

-- Working on a task lets an agent see the task's context (its ancestors and their inputs, its chain),
-- but a task an agent sent itself grants it nothing beyond its own rights: else a holder moved off a
-- task would keep reading it (and retrying within it) through a child it had addressed to itself.
create function baton_private.works_on(t public.task_handoffs, agent text) returns boolean
language sql stable set search_path = ''
as $$
  select coalesce(
    t.from_agent <> agent and (
      t.claimed_by = agent or t.to_agent = agent
      or (t.to_agent is null and t.required_capabilities <@ baton_private.agent_capabilities(agent))),
    false)
$$;

-- Follow-ups count against the hand-off quota on every path. A completion with a follow-up refused the
-- follow-up past the quota (BT013) when it came alone, but one reported in a batch (what the daemon
-- sends) made it uncounted, as the batch's flag turned the quota trigger off for the whole request.
create function baton_private.create_follow_up(parent public.task_handoffs, request jsonb, agent text) returns uuid
language plpgsql security definer set search_path = ''
as $$
declare
  child uuid;
  batch text := coalesce(current_setting('baton.batch', true), '');
begin
  if request ? 'to_agent' and not exists (select from public.agents a where a.id = request ->> 'to_agent') then
    raise exception 'the follow-up names no agent "%"', request ->> 'to_agent'
      using errcode = 'BT002', hint = 'Name a registered agent, or a capability instead.';
  end if;
  if request ? 'payload' and jsonb_typeof(request -> 'payload') <> 'object' then
    raise exception 'the follow-up''s payload must be a JSON object' using errcode = 'BT005', hint = 'Pass {"payload": {...}} or none.';
  end if;
  -- A follow-up is one hand-off, counted by the quota trigger as any other, also when its completion
  -- came in a batch (report_outcomes, report_and_claim), which otherwise counts its own work at its end.
  perform set_config('baton.batch', '', true);
  insert into public.task_handoffs (
    from_agent, to_agent, required_capabilities, title, description, payload, expected_outputs, input_artifacts,
    parent_task_id, idempotency_key
  ) values (
    agent,
    request ->> 'to_agent',
    case jsonb_typeof(request -> 'capability')
      when 'string' then array[request ->> 'capability']
      when 'array' then array(select jsonb_array_elements_text(request -> 'capability'))
      else '{}' end,
    request ->> 'title',
    request ->> 'reason',
    coalesce(request -> 'payload', '{}') || jsonb_strip_nulls(jsonb_build_object('task_type', request -> 'task_type', 'context', request -> 'context')),
    coalesce(request -> 'expected_outputs', '[]'),
    coalesce((
      select jsonb_agg(jsonb_build_object('task_id', parent.id, 'name', a.name) order by a.name)
      from public.task_artifacts a where a.task_id = parent.id), '[]'),
    parent.id,
    'follow-up:' || parent.id
  )
  on conflict (from_agent, idempotency_key) where idempotency_key is not null do nothing
  returning id into child;
  perform set_config('baton.batch', batch, true);
  return child;
end
$$;
