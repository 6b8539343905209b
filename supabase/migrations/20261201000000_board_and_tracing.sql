-- The web board's counts and the trace context of every task (added after the layout by area; see
-- docs/observability.md and docs/board.md).

-- Trace context --------------------------------------------------------------------------------------
alter table public.task_handoffs
  add column traceparent text,
  add column tracestate text,
  add constraint task_handoffs_traceparent_check CHECK ((traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text)),
  add constraint task_handoffs_tracestate_check CHECK ((length(tracestate) <= 512));

comment on column public.task_handoffs.traceparent is 'The W3C trace context the task was handed off in (its hand-off request''s traceparent header), else its parent''s, else the task it retries: one trace from the first hand-off to the last result. Used for tracing only; a malformed header is dropped.';
comment on column public.task_handoffs.tracestate is 'The W3C tracestate that came with traceparent (at most 512 characters).';

-- The insert trigger of the tasks file, with the one rule for a task's trace context added at its end.
create or replace function baton_private.tg_task_handoffs__prepare_insert() returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  parent public.task_handoffs;
  max_depth integer;
  headers text := current_setting('request.headers', true);
begin
  new.status := 'pending';
  new.claimed_by := null;
  new.claim_token := null;
  new.claimed_at := null;
  new.started_at := null;
  new.completed_at := null;
  new.lease_expires_at := null;
  new.result := null;
  new.attempts := 0;
  new.not_before := null;
  new.created_at := now();
  new.updated_at := now();
  if new.deadline is not null and new.deadline <= now() then
    raise exception 'the deadline % is already past', new.deadline
      using errcode = 'BT005', hint = 'Give a deadline in the future, or none.';
  end if;
  if new.parent_task_id is null then
    new.depth := 0;
    new.root_task_id := new.id;
  else
    select * into parent from public.task_handoffs t where t.id = new.parent_task_id;
    if not found then
      raise exception 'no parent task %', new.parent_task_id
        using errcode = 'BT002', hint = 'Name an existing task as the parent, or none.';
    end if;
    new.depth := parent.depth + 1;
    new.root_task_id := parent.root_task_id;
    max_depth := (baton_private.settings()).max_chain_depth;
    if new.depth > max_depth then
      raise exception 'handing off task % would make a chain % deep; the limit is %', parent.id, new.depth, max_depth
        using errcode = 'BT009',
              hint = 'Finish the work within this task instead of handing it on; an operator can raise baton_settings.max_chain_depth.';
    end if;
    if parent.deadline is not null then
      new.deadline := least(coalesce(new.deadline, parent.deadline), parent.deadline);
    end if;
  end if;
  -- The trace: the caller's context (its request's W3C headers; parsed only when there are any), else
  -- the parent's, else the retried task's. Tracing only, so a malformed header is dropped, not refused.
  if headers like '%traceparent%' then
    new.traceparent := headers::jsonb ->> 'traceparent';
    new.tracestate := left(headers::jsonb ->> 'tracestate', 512);
  end if;
  if new.traceparent is null or new.traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' then
    new.traceparent := parent.traceparent;
    new.tracestate := parent.tracestate;
    if new.retry_of is not null and parent.id is null then
      select t.traceparent, t.tracestate into new.traceparent, new.tracestate from public.task_handoffs t where t.id = new.retry_of;
    end if;
  end if;
  return new;
end
$$;

-- The board's counts ---------------------------------------------------------------------------------
-- What a board shows first, read with the caller's rights (an agent counts the tasks it may see): tasks
-- by status, and how many finished in each of the last 60 minutes.
create index task_handoffs_created_idx on public.task_handoffs (created_at desc, id);

create view public.task_counts with (security_invoker = true) as
  select t.status, count(*)::integer as tasks
  from public.task_handoffs t
  group by t.status;

revoke all on public.task_counts from anon, authenticated;
grant select on public.task_counts to authenticated, service_role;

comment on view public.task_counts is 'How many tasks are in each status (of those the reader may see).';

create view public.task_throughput with (security_invoker = true) as
  select date_trunc('minute', t.completed_at) as minute,
         count(*) filter (where t.status = 'completed')::integer as completed,
         count(*) filter (where t.status = 'failed')::integer as failed,
         count(*) filter (where t.status in ('cancelled', 'rejected'))::integer as withdrawn
  from public.task_handoffs t
  where t.completed_at > now() - interval '1 hour'
  group by 1;

revoke all on public.task_throughput from anon, authenticated;
grant select on public.task_throughput to authenticated, service_role;

comment on view public.task_throughput is 'Tasks that ended in each minute of the last hour (of those the reader may see): completed, failed, and cancelled or rejected.';

-- The request check guards the two new views as it guards every relation Baton serves.
create or replace function baton_private.baton_relations() returns text[]
language sql immutable
as $$
  select array[
    -- tables
    'agents', 'agent_tokens', 'agent_messages', 'agent_usage', 'baton_settings', 'recurring_handoffs',
    'task_handoffs', 'task_events', 'task_artifacts', 'task_declines', 'task_status_transitions',
    -- views
    'agent_presence', 'task_lineage', 'dead_letters', 'waiting_tasks', 'stuck_claims', 'task_queue', 'task_counts',
    'task_throughput']
$$;
