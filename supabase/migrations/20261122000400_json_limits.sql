-- JSON that one agent stores is read by others: besides its size, its depth and breadth are bounded, so
-- that no payload, result, message or skill list can break a reader that walks it.

alter table public.baton_settings
  add column max_json_depth integer not null default 32 check (max_json_depth between 2 and 256),
  add column max_json_keys integer not null default 10000 check (max_json_keys between 1 and 100000);
comment on column public.baton_settings.max_json_depth is 'How deeply any stored JSON (payload, result, problems, message body, skills) may nest.';
comment on column public.baton_settings.max_json_keys is 'How many keys one JSON object, or items one JSON array, may hold.';

-- Refuses JSON nested deeper than max_json_depth or with an object or array wider than max_json_keys.
-- The depth test is one SQL/JSON path query (C, no recursion in SQL); the width test walks only as deep
-- as the depth limit allows.
create function baton_private.check_json_shape(value jsonb, what text) returns void
language plpgsql stable security definer set search_path = ''
as $$
declare
  settings public.baton_settings := baton_private.settings();
  widest integer;
begin
  if value is null or jsonb_typeof(value) not in ('object', 'array') or value in ('{}'::jsonb, '[]'::jsonb) then
    return;
  end if;
  if jsonb_path_exists(value, format('strict $.**{%s to last}', settings.max_json_depth)::jsonpath) then
    raise exception '% nests deeper than % levels', what, settings.max_json_depth
      using errcode = 'BT005', hint = 'Flatten the structure; an operator can raise baton_settings.max_json_depth.';
  end if;
  select max(case jsonb_typeof(node) when 'object' then (select count(*) from jsonb_object_keys(node))
                                     when 'array' then jsonb_array_length(node) end)
  into widest
  from jsonb_path_query(value, 'strict $.**') as node
  where jsonb_typeof(node) in ('object', 'array');
  if widest > settings.max_json_keys then
    raise exception '% has an object or array of % entries; the limit is %', what, widest, settings.max_json_keys
      using errcode = 'BT005', hint = 'Split it up or link to it; an operator can raise baton_settings.max_json_keys.';
  end if;
end
$$;

create function baton_private.tg_task_handoffs__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.payload is distinct from old.payload then
    perform baton_private.check_json_shape(new.payload, 'the payload');
  end if;
  if tg_op = 'INSERT' or new.result is distinct from old.result then
    perform baton_private.check_json_shape(new.result, 'the result');
  end if;
  if tg_op = 'INSERT' or new.problems is distinct from old.problems then
    if octet_length(new.problems::text) > 65536 or jsonb_typeof(new.problems) = 'array' and jsonb_array_length(new.problems) > 100 then
      raise exception 'the problems reported are larger than 64 KiB or 100 entries'
        using errcode = 'BT005', hint = 'Report the first problems, each {path, message} in a line.';
    end if;
    perform baton_private.check_json_shape(new.problems, 'the problems');
  end if;
  if tg_op = 'INSERT' then
    perform baton_private.check_json_shape(new.expected_outputs, 'the expected outputs');
    perform baton_private.check_json_shape(new.input_artifacts, 'the input artifacts');
  end if;
  return new;
end
$$;
create trigger limit_json before insert or update on public.task_handoffs
  for each row execute function baton_private.tg_task_handoffs__limit_json();

create function baton_private.tg_agents__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.skills_offered is distinct from old.skills_offered then
    perform baton_private.check_json_shape(new.skills_offered, 'skills_offered');
  end if;
  return new;
end
$$;
create trigger limit_json before insert or update on public.agents
  for each row execute function baton_private.tg_agents__limit_json();

create function baton_private.tg_agent_messages__limit_json() returns trigger
language plpgsql set search_path = ''
as $$
begin
  perform baton_private.check_json_shape(new.body, 'the message body');
  return new;
end
$$;
create trigger limit_json before insert on public.agent_messages
  for each row execute function baton_private.tg_agent_messages__limit_json();
