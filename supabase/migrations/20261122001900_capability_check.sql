-- The check of a task's required capabilities, without a query.
--
-- The validation trigger checked each capability with a subquery over unnest(...): a query for every
-- task handed off, half the trigger's cost (29 of its µs a task, track_functions, 10,000 hand-offs on a
-- stack with a million finished tasks; 14-16 µs with the loop below, which PL/pgSQL evaluates as plain
-- expressions). The rule is the same: at most 32, none null, each a slug (baton_private.is_slug, which
-- PostgreSQL inlines). Otherwise as in …0900_lean_paths.sql.

create or replace function baton_private.tg_task_handoffs__validate() returns trigger
language plpgsql set search_path = ''
as $$
declare
  fresh boolean := tg_op = 'INSERT';
  capability text;
  invalid boolean;
begin
  if fresh or new.title is distinct from old.title then
    if new.title is null or btrim(new.title) = '' then
      raise exception 'a task needs a title' using errcode = 'BT005', hint = 'Give a short, non-empty title.';
    end if;
    if length(new.title) > 200 then
      raise exception 'the title is % characters long; the limit is 200', length(new.title)
        using errcode = 'BT005', hint = 'Shorten the title and put the detail in the description.';
    end if;
  end if;
  if (fresh or new.description is distinct from old.description) and length(new.description) > 20000 then
    raise exception 'the description is % characters long; the limit is 20000', length(new.description)
      using errcode = 'BT005', hint = 'Put long material in the payload or link it.';
  end if;
  if fresh or new.payload is distinct from old.payload then
    if jsonb_typeof(new.payload) <> 'object' then
      raise exception 'the payload must be a JSON object, not %', jsonb_typeof(new.payload)
        using errcode = 'BT005', hint = 'Wrap the value, e.g. {"input": ...}.';
    end if;
    if octet_length(new.payload::text) > 262144 then
      raise exception 'the payload is % bytes; the limit is 256 KiB', octet_length(new.payload::text)
        using errcode = 'BT005', hint = 'Store large inputs elsewhere and pass a link in the payload.';
    end if;
  end if;
  if (fresh or new.expected_outputs is distinct from old.expected_outputs) and new.expected_outputs <> '[]' then
    perform baton_private.check_expected_outputs(new.expected_outputs);
  end if;
  if new.result is not null and (fresh or new.result is distinct from old.result) then
    perform baton_private.check_result(new.result);
    if octet_length(new.result::text) > 262144 then
      raise exception 'the result is % bytes; the limit is 256 KiB', octet_length(new.result::text)
        using errcode = 'BT005', hint = 'Store large outputs elsewhere and put a link in the result.';
    end if;
  end if;
  if fresh or new.required_capabilities is distinct from old.required_capabilities then
    invalid := cardinality(new.required_capabilities) > 32;
    foreach capability in array coalesce(new.required_capabilities, '{}') loop
      exit when invalid;
      invalid := capability is null or not baton_private.is_slug(capability);
    end loop;
    if invalid then
      raise exception 'invalid required capabilities'
        using errcode = 'BT005',
              hint = 'Give at most 32 capabilities, each 1 to 63 lower-case letters, digits, ., :, - or _.';
    end if;
  end if;
  if fresh and (length(new.idempotency_key) > 200 or new.idempotency_key = '') then
    raise exception 'an idempotency key must be 1 to 200 characters'
      using errcode = 'BT005', hint = 'Use a short unique string, e.g. a hash of the request.';
  end if;
  if fresh or new.max_attempts is distinct from old.max_attempts then
    if new.max_attempts is null or new.max_attempts not between 1 and 100 then
      raise exception 'max_attempts must be between 1 and 100, got %', new.max_attempts
        using errcode = 'BT005', hint = 'Use a small number such as 3.';
    end if;
  end if;
  if (fresh or new.lease_seconds is distinct from old.lease_seconds) and new.lease_seconds is not null then
    perform baton_private.check_lease(new.lease_seconds);
  end if;
  if new.progress_percent not between 0 and 100 then
    raise exception 'progress must be a percentage from 0 to 100, got %', new.progress_percent
      using errcode = 'BT005', hint = 'Give a whole number such as 40.';
  end if;
  if length(new.progress_message) > 2000 then
    new.progress_message := left(new.progress_message, 2000);
  end if;
  if length(new.status_reason) > 4000 then
    new.status_reason := left(new.status_reason, 4000);
  end if;
  return new;
end
$$;
