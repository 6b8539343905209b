-- The status machine's rule, compiled into the WHEN clause of a trigger of its own.
--
-- Until now compile_transitions() wrote the rule into baton_private.transition_allowed(), which the
-- transition trigger called on every change of status. Inlined as a SQL function it cost nothing
-- extra; since the search_path of every helper is fixed (lint 0011, 20261206000000), it is a call of
-- its own with a switch of search_path on each side, three times a task (claimed, in progress, done).
-- A trigger's WHEN clause is an expression the executor evaluates in place, with no call at all, and
-- the function behind it runs only when a change is refused.
--
-- task_status_transitions stays the rule; this trigger is compiled from it, and compiled again
-- whenever the table changes (tg_task_status_transitions__compile, as before). Recompiling replaces the
-- trigger, which takes a SHARE ROW EXCLUSIVE lock on task_handoffs until the operator's change commits:
-- writes to tasks wait for it, reads do not.
--
-- The trigger is named to fire just before step3_transition, which stamps the times of the change
-- that this one has let through.

create function baton_private.tg_task_handoffs__refuse_transition() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  allowed text;
begin
  select pg_catalog.string_agg(tr.to_status::text, ', ' order by tr.to_status) into allowed
  from public.task_status_transitions tr where tr.from_status = old.status;
  raise exception 'task % is %; it cannot become %', old.id, old.status, new.status
    using errcode = 'BT001',
          hint = case when allowed is null then pg_catalog.format('%s is final: nothing can change it.', old.status)
                      else pg_catalog.format('From %s a task may become: %s.', old.status, allowed) end;
end
$$;

revoke all on function baton_private.tg_task_handoffs__refuse_transition() from public, anon, authenticated;
comment on function baton_private.tg_task_handoffs__refuse_transition() is 'Refuses a change of status that task_status_transitions does not allow; runs only when the WHEN clause of the trigger step3_status_allowed, compiled from that table by compile_transitions(), finds one.';

create or replace function baton_private.compile_transitions() returns void
language plpgsql security definer set search_path = ''
as $$
declare
  cases text;
begin
  select coalesce(string_agg(pg_catalog.format('when %L::public.task_status then new.status in (%s)', f.from_status, f.targets), ' ' order by f.from_status), '')
  into cases
  from (
    select tr.from_status, string_agg(pg_catalog.format('%L::public.task_status', tr.to_status), ', ' order by tr.to_status) as targets
    from public.task_status_transitions tr
    group by tr.from_status
  ) f;
  execute pg_catalog.format($ddl$
    create or replace trigger step3_status_allowed before update on public.task_handoffs
      for each row when (old.status is distinct from new.status and not %s)
      execute function baton_private.tg_task_handoffs__refuse_transition()
  $ddl$, case when cases = '' then 'false' -- an empty table allows no change at all
              else pg_catalog.format('coalesce(case old.status %s else false end, false)', cases) end);
end
$$;

comment on function baton_private.compile_transitions() is 'Compiles task_status_transitions into the WHEN clause of the trigger step3_status_allowed on task_handoffs; runs whenever that table changes.';

select baton_private.compile_transitions();

-- The transition trigger no longer checks the rule itself: step3_status_allowed has, just before it.
create or replace function baton_private.tg_task_handoffs__transition() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.id <> old.id or new.from_agent <> old.from_agent or new.created_at <> old.created_at
     or new.parent_task_id is distinct from old.parent_task_id or new.root_task_id is distinct from old.root_task_id
     or new.depth <> old.depth or new.idempotency_key is distinct from old.idempotency_key then
    raise exception 'the identity, sender and chain of task % cannot change', old.id
      using errcode = 'BT005', hint = 'Hand off a new task instead.';
  end if;

  if new.status is distinct from old.status then
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
  end if;

  new.updated_at := pg_catalog.now();
  return new;
end
$$;

drop function baton_private.transition_allowed(public.task_status, public.task_status);
