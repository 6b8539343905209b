-- Follow-ups count against the hand-off quota on every path. A completion with a follow-up refused the
-- follow-up past the quota (BT013) when it came alone, but one reported in a batch (what the daemon
-- sends) made it uncounted, as the batch's flag turned the quota trigger off for the whole request.

create or replace function baton_private.create_follow_up(parent public.task_handoffs, request jsonb, agent text) returns uuid
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
