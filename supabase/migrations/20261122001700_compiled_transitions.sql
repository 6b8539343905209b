-- The transition rule, checked without a query per row.
--
-- The transition trigger runs for every status change (two per task: its claim and its end). It looked
-- up task_status_transitions with a query for each row, and ran with its own search_path, which Postgres
-- sets and restores on every call. Measured with track_functions on a claim-and-report loop (10 per
-- call, three alternated runs each), the trigger cost 69-76 µs of Postgres per task, and 25-27 as
-- below; a claim and completion went from 1.17-1.22 to 1.04-1.09 ms.
--
-- task_status_transitions stays the rule: baton_private.transition_allowed() is compiled from it, one
-- CASE over the from-status, and compiled again by a trigger whenever the table changes. It is a SQL
-- function that PostgreSQL inlines into the trigger's expression; replacing it invalidates the plans
-- that inlined it, in every session. The trigger runs with its caller's rights and names what it
-- calls in full, so it needs no search_path of its own.

create function baton_private.compile_transitions() returns void
language plpgsql security definer set search_path = ''
as $$
declare
  cases text;
begin
  select coalesce(string_agg(pg_catalog.format('when %L then to_status in (%s)', f.from_status, f.targets), ' ' order by f.from_status), '')
  into cases
  from (
    select tr.from_status, string_agg(pg_catalog.format('%L::public.task_status', tr.to_status), ', ' order by tr.to_status) as targets
    from public.task_status_transitions tr
    group by tr.from_status
  ) f;
  execute pg_catalog.format($ddl$
    create or replace function baton_private.transition_allowed(from_status public.task_status, to_status public.task_status)
    returns boolean language sql stable parallel safe
    as $body$ select %s $body$
  $ddl$, case when cases = '' then 'false' -- an empty table allows no change at all
              else pg_catalog.format('coalesce(case from_status %s else false end, false)', cases) end);
end
$$;

select baton_private.compile_transitions();
-- The transition trigger runs as whoever writes the task: Baton's own functions, or the service role.
grant execute on function baton_private.transition_allowed(public.task_status, public.task_status) to service_role;
comment on function baton_private.transition_allowed is 'Whether task_status_transitions allows a task to go from from_status to to_status; compiled from that table (baton_private.compile_transitions) whenever it changes.';

create function baton_private.tg_task_status_transitions__compile() returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  perform baton_private.compile_transitions();
  return null;
end
$$;
create trigger compile after insert or update or delete or truncate on public.task_status_transitions
  for each statement execute function baton_private.tg_task_status_transitions__compile();

revoke all on function baton_private.compile_transitions() from public, anon, authenticated;
revoke all on function baton_private.tg_task_status_transitions__compile() from public, anon, authenticated;

-- As in …0700_throughput.sql, with the rule checked through transition_allowed.
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
  new.updated_at := pg_catalog.now();
  return new;
end
$$;
