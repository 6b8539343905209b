-- A task's result, checked in the transition trigger.
--
-- A completion sets the status and the result in one UPDATE. The result was checked by two more row
-- triggers, limit_json_on_change (how deeply and widely it nests) and validate_on_change (its fields and
-- size): two more PL/pgSQL calls per completed task, each reading the whole new and old rows and
-- building the row again, one under a search_path of its own, and between them three more calls
-- (check_json_shape, settings, check_result). In a profile of the worker's backend on a claim-and-report
-- loop (report_and_claim, 10 per call, direct connections, perf), those two triggers were 9 % of its
-- CPU, the transition trigger (two calls per task) 2.5 %.
--
-- The transition trigger runs for every update anyway. It now makes the same checks, in the same order
-- and with the same errors, when the result changes, and the other two no longer fire for the result
-- alone (they still check it when they fire for another column). check_json_shape and check_result
-- stay the rules, called as before. Interleaved pairs of runs of 2,000 tasks on that loop: 0.03 ms less
-- Postgres CPU per task, median of ten pairs (0.025 in twelve pairs of a version that also skipped the
-- two calls for the usual result: no gain worth a second copy of their rules).

create or replace function baton_private.tg_task_handoffs__transition() returns trigger
language plpgsql
as $$
declare
  allowed text;
begin
  if new.id <> old.id or new.from_agent <> old.from_agent or new.created_at <> old.created_at
     or new.parent_task_id is distinct from old.parent_task_id or new.root_task_id is distinct from old.root_task_id
     or new.depth <> old.depth or new.idempotency_key is distinct from old.idempotency_key then
    raise exception 'the identity, sender and chain of task % cannot change', old.id
      using errcode = 'BT005', hint = 'Hand off a new task instead.';
  end if;

  if new.status is distinct from old.status then
    if not baton_private.transition_allowed(old.status, new.status) then
      select pg_catalog.string_agg(tr.to_status::text, ', ' order by tr.to_status) into allowed
      from public.task_status_transitions tr where tr.from_status = old.status;
      raise exception 'task % is %; it cannot become %', old.id, old.status, new.status
        using errcode = 'BT001',
              hint = case when allowed is null then pg_catalog.format('%s is final: nothing can change it.', old.status)
                          else pg_catalog.format('From %s a task may become: %s.', old.status, allowed) end;
    end if;

    case new.status
      when 'claimed' then
        new.claimed_at := pg_catalog.now();
        new.started_at := null;
      when 'in_progress' then
        if old.status = 'pending' then
          new.claimed_at := pg_catalog.now();
        end if;
        new.started_at := coalesce(new.started_at, pg_catalog.now());
      when 'pending' then
        new.claimed_by := null;
        new.claim_token := null;
        new.claimed_at := null;
        new.started_at := null;
        new.lease_expires_at := null;
        new.progress_message := null;
        new.progress_percent := null;
        new.progress_at := null;
      when 'completed', 'failed', 'rejected', 'cancelled' then
        new.completed_at := pg_catalog.now();
        new.lease_expires_at := null;
        new.claim_token := null;
      else
        null;
    end case;
  end if;

  -- The result, checked as limit_json_on_change and then validate_on_change checked it: its nesting,
  -- its fields and its size.
  if new.result is not null and new.result is distinct from old.result then
    perform baton_private.check_json_shape(new.result, 'the result');
    perform baton_private.check_result(new.result);
    if pg_catalog.octet_length(new.result::text) > 262144 then
      raise exception 'the result is % bytes; the limit is 256 KiB', pg_catalog.octet_length(new.result::text)
        using errcode = 'BT005', hint = 'Store large outputs elsewhere and put a link in the result.';
    end if;
  end if;

  new.updated_at := pg_catalog.now();
  return new;
end
$$;

drop trigger limit_json_on_change on public.task_handoffs;
create trigger limit_json_on_change before update on public.task_handoffs
  for each row when (new.payload is distinct from old.payload or new.problems is distinct from old.problems)
  execute function baton_private.tg_task_handoffs__limit_json();

drop trigger validate_on_change on public.task_handoffs;
create trigger validate_on_change before update on public.task_handoffs
  for each row when (new.title is distinct from old.title or new.description is distinct from old.description
                     or new.payload is distinct from old.payload or new.expected_outputs is distinct from old.expected_outputs
                     or new.required_capabilities is distinct from old.required_capabilities
                     or new.max_attempts is distinct from old.max_attempts or new.lease_seconds is distinct from old.lease_seconds
                     or new.progress_percent is distinct from old.progress_percent
                     or new.progress_message is distinct from old.progress_message
                     or new.status_reason is distinct from old.status_reason)
  execute function baton_private.tg_task_handoffs__validate();
