-- check_json_shape reads its two limits itself instead of calling settings() (issue 48).
--
-- Every result, payload and message body passes through it (about one call a task), and a call of
-- settings() costs a function call and, since the empty search_path every helper now has, a switch of
-- search_path there and back: 36 µs of Postgres a call in bench:throughput with track_functions on.
-- The limits are the same two columns of the one settings row; the rule is unchanged.
create or replace function baton_private.check_json_shape(value jsonb, what text) returns void
language plpgsql stable set search_path = ''
as $$
declare
  max_depth integer;
  max_keys integer;
  widest integer;
begin
  if value is null or pg_catalog.jsonb_typeof(value) not in ('object', 'array') or value in ('{}'::jsonb, '[]'::jsonb) then
    return;
  end if;
  select s.max_json_depth, s.max_json_keys into max_depth, max_keys from public.baton_settings s where s.id;
  if pg_catalog.pg_column_compression(value) is null
     and pg_catalog.pg_column_size(value) < least(8 * max_depth, 4 * max_keys) then
    return;
  end if;
  if pg_catalog.jsonb_path_exists(value, pg_catalog.format('strict $.**{%s to last}', max_depth)::jsonpath) then
    raise exception '% nests deeper than % levels', what, max_depth
      using errcode = 'BT005', hint = 'Flatten the structure; an operator can raise baton_settings.max_json_depth.';
  end if;
  select max(case pg_catalog.jsonb_typeof(node) when 'object' then (select count(*) from pg_catalog.jsonb_object_keys(node))
                                                when 'array' then pg_catalog.jsonb_array_length(node) end)
  into widest
  from pg_catalog.jsonb_path_query(value, 'strict $.**') as node
  where pg_catalog.jsonb_typeof(node) in ('object', 'array');
  if widest > max_keys then
    raise exception '% has an object or array of % entries; the limit is %', what, widest, max_keys
      using errcode = 'BT005', hint = 'Split it up or link to it; an operator can raise baton_settings.max_json_keys.';
  end if;
end
$$;
