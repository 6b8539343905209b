-- The smallest helpers run tens of thousands of times an hour on a busy project: inside every policy
-- check, trigger and RPC. A SQL function with a SET clause or SECURITY DEFINER cannot be inlined and
-- pays for a search_path switch on every call (about 0.1 ms each, measured with track_functions under
-- bench:throughput). These name their functions fully (pg_catalog, searched first, supplies the rest) and
-- run with the caller's rights, which suffice: anyone may read their own request's settings.

create or replace function baton_private.current_agent_id() returns text
language sql stable
as $$ select nullif(auth.jwt() ->> 'agent_id', '') $$;

create or replace function baton_private.in_batch() returns boolean
language sql stable
as $$ select coalesce(pg_catalog.current_setting('baton.batch', true), '') = 'on' $$;

create or replace function baton_private.event_actor() returns text
language sql stable
as $$
  select coalesce(nullif(pg_catalog.current_setting('baton.actor', true), ''), baton_private.current_agent_id(),
                  nullif(auth.role(), ''), session_user)
$$;

-- Read by nearly every rule; agents may read the settings row themselves (its policy allows it), and
-- definer functions read it as its owner.
create or replace function baton_private.settings() returns public.baton_settings
language sql stable
as $$ select s from public.baton_settings s where s.id $$;

-- Called by the validation triggers for every JSON column that changes.
create or replace function baton_private.check_json_shape(value jsonb, what text) returns void
language plpgsql stable
as $$
declare
  settings public.baton_settings;
  widest integer;
begin
  if value is null or pg_catalog.jsonb_typeof(value) not in ('object', 'array') or value in ('{}'::jsonb, '[]'::jsonb) then
    return;
  end if;
  settings := baton_private.settings();
  if pg_catalog.jsonb_path_exists(value, pg_catalog.format('strict $.**{%s to last}', settings.max_json_depth)::jsonpath) then
    raise exception '% nests deeper than % levels', what, settings.max_json_depth
      using errcode = 'BT005', hint = 'Flatten the structure; an operator can raise baton_settings.max_json_depth.';
  end if;
  select max(case pg_catalog.jsonb_typeof(node) when 'object' then (select count(*) from pg_catalog.jsonb_object_keys(node))
                                                when 'array' then pg_catalog.jsonb_array_length(node) end)
  into widest
  from pg_catalog.jsonb_path_query(value, 'strict $.**') as node
  where pg_catalog.jsonb_typeof(node) in ('object', 'array');
  if widest > settings.max_json_keys then
    raise exception '% has an object or array of % entries; the limit is %', what, widest, settings.max_json_keys
      using errcode = 'BT005', hint = 'Split it up or link to it; an operator can raise baton_settings.max_json_keys.';
  end if;
end
$$;

-- check_json_shape now reads the settings as the requesting role.
grant execute on function baton_private.settings() to authenticated, service_role;

-- Every history note stays within 2,000 characters, whoever writes it (reassign_task writes its own;
-- the fuzz test found a 5,000-character one).
create function baton_private.tg_task_events__bound_note() returns trigger
language plpgsql set search_path = ''
as $$
begin
  new.note := left(new.note, 2000);
  return new;
end
$$;
create trigger bound_note before insert on public.task_events
  for each row when (length(new.note) > 2000) execute function baton_private.tg_task_events__bound_note();
