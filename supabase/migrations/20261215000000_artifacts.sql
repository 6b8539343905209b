-- An artifact's JSON Schema is the database's rule (issue 72): the json_schema a task declares for an
-- expected output was checked only by Baton's TypeScript client, so an agent attaching over HTTP (as
-- docs/agents.md shows with curl) stored what the schema refuses. attach_artifact now checks it, and a
-- hand-off may declare only schemas the database can check (the keywords below; annotations such as
-- title or description pass). The problems are said as Ajv says them, with each one's JSON Pointer.

-- The keywords the check understands, and the annotations it lets pass unread.
create function baton_private.schema_keywords()
returns text[]
language sql immutable set search_path = ''
as $$ select array[
  'type', 'enum', 'const', 'required', 'properties', 'additionalProperties', 'items', 'minItems', 'maxItems',
  'uniqueItems', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'multipleOf', 'allOf', 'anyOf', 'oneOf', 'not',
  '$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'format', 'deprecated', 'readOnly', 'writeOnly'] $$;
revoke all on function baton_private.schema_keywords() from public, anon, authenticated;
comment on function baton_private.schema_keywords() is 'The JSON Schema keywords an expected output''s json_schema may use: those schema_problems checks, and annotations it lets pass.';

-- The keywords of a schema, and of every schema inside it, that the check does not understand; a
-- pattern that is no regular expression Postgres reads, and a schema nested deeper than 32, count too.
create function baton_private.schema_unknown_keywords(s jsonb, depth integer default 0)
returns text[]
language plpgsql immutable set search_path = ''
as $$
declare
  unknown text[] := '{}';
  sub jsonb;
begin
  if jsonb_typeof(s) is distinct from 'object' then return unknown; end if;
  if depth > 32 then return array['schemas nested deeper than 32']; end if;
  select coalesce(array_agg(k), '{}') into unknown from jsonb_object_keys(s) k where k <> all (baton_private.schema_keywords());
  if s ? 'pattern' then
    begin
      perform '' ~ (s ->> 'pattern');
    exception when others then
      unknown := unknown || format('pattern %s (not a regular expression Postgres reads: %s)', s -> 'pattern', sqlerrm);
    end;
  end if;
  for sub in
    select value from jsonb_each(case when jsonb_typeof(s -> 'properties') = 'object' then s -> 'properties' else '{}' end)
    union all select s -> 'additionalProperties' where jsonb_typeof(s -> 'additionalProperties') = 'object'
    union all select s -> 'items' where jsonb_typeof(s -> 'items') = 'object'
    union all select s -> 'not' where jsonb_typeof(s -> 'not') = 'object'
    union all select value from jsonb_array_elements(case when jsonb_typeof(s -> 'allOf') = 'array' then s -> 'allOf' else '[]' end)
    union all select value from jsonb_array_elements(case when jsonb_typeof(s -> 'anyOf') = 'array' then s -> 'anyOf' else '[]' end)
    union all select value from jsonb_array_elements(case when jsonb_typeof(s -> 'oneOf') = 'array' then s -> 'oneOf' else '[]' end)
  loop
    unknown := unknown || baton_private.schema_unknown_keywords(sub, depth + 1);
  end loop;
  return unknown;
end
$$;
revoke all on function baton_private.schema_unknown_keywords(jsonb, integer) from public, anon, authenticated;
comment on function baton_private.schema_unknown_keywords(jsonb, integer) is 'The keywords of a JSON Schema, its sub-schemas'' included, that schema_problems does not check; an unreadable pattern and nesting deeper than 32 too.';

-- Whether a JSON value is of a JSON Schema type.
create function baton_private.schema_type_is(v jsonb, type text)
returns boolean
language sql immutable set search_path = ''
as $$ select case type
  when 'integer' then jsonb_typeof(v) = 'number' and (v #>> '{}')::numeric = trunc((v #>> '{}')::numeric)
  when 'null' then jsonb_typeof(v) = 'null'
  else jsonb_typeof(v) = type end $$;
revoke all on function baton_private.schema_type_is(jsonb, text) from public, anon, authenticated;
comment on function baton_private.schema_type_is(jsonb, text) is 'Whether the JSON value v is of the JSON Schema type named (integer: a number without a fraction).';

-- What is wrong with value v against schema s, at JSON Pointer `at`: [{path, message}], empty when it matches.
create function baton_private.schema_problems(s jsonb, v jsonb, at text default '')
returns jsonb
language plpgsql immutable set search_path = ''
as $$
declare
  problems jsonb := '[]';
  here text := coalesce(nullif(at, ''), '/');
  types text[];
  n numeric;
  k text;
  sub jsonb;
  i integer;
  matched integer;
begin
  -- Nothing to check against (SQL evaluates both sides of an and: each recursion below is behind an if).
  if s is null or v is null or jsonb_typeof(s) not in ('object', 'boolean') then return problems; end if;
  if jsonb_typeof(s) = 'boolean' then
    return case when s = 'false' then jsonb_build_array(jsonb_build_object('path', here, 'message', 'boolean schema is false')) else '[]' end;
  end if;
  if s ? 'type' then
    types := case when jsonb_typeof(s -> 'type') = 'array' then array(select jsonb_array_elements_text(s -> 'type')) else array[s ->> 'type'] end;
    if not exists (select from unnest(types) t where baton_private.schema_type_is(v, t)) then
      -- A value of another type meets none of the keywords for its type: as Ajv, say the type alone.
      return jsonb_build_array(jsonb_build_object('path', here, 'message', 'must be ' || array_to_string(types, ',')));
    end if;
  end if;
  if jsonb_typeof(s -> 'enum') = 'array' and not exists (select from jsonb_array_elements(s -> 'enum') e where e = v) then
    problems := problems || jsonb_build_object('path', here, 'message', 'must be equal to one of the allowed values');
  end if;
  if s ? 'const' and (s -> 'const') is distinct from v then
    problems := problems || jsonb_build_object('path', here, 'message', 'must be equal to constant');
  end if;
  if jsonb_typeof(v) = 'number' then
    n := (v #>> '{}')::numeric;
    if jsonb_typeof(s -> 'minimum') = 'number' and n < (s ->> 'minimum')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', 'must be >= ' || (s ->> 'minimum'));
    end if;
    if jsonb_typeof(s -> 'maximum') = 'number' and n > (s ->> 'maximum')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', 'must be <= ' || (s ->> 'maximum'));
    end if;
    if jsonb_typeof(s -> 'exclusiveMinimum') = 'number' and n <= (s ->> 'exclusiveMinimum')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', 'must be > ' || (s ->> 'exclusiveMinimum'));
    end if;
    if jsonb_typeof(s -> 'exclusiveMaximum') = 'number' and n >= (s ->> 'exclusiveMaximum')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', 'must be < ' || (s ->> 'exclusiveMaximum'));
    end if;
    if jsonb_typeof(s -> 'multipleOf') = 'number' and (s ->> 'multipleOf')::numeric > 0 and mod(n, (s ->> 'multipleOf')::numeric) <> 0 then
      problems := problems || jsonb_build_object('path', here, 'message', 'must be multiple of ' || (s ->> 'multipleOf'));
    end if;
  elsif jsonb_typeof(v) = 'string' then
    if jsonb_typeof(s -> 'minLength') = 'number' and length(v #>> '{}') < (s ->> 'minLength')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', format('must NOT have fewer than %s characters', s ->> 'minLength'));
    end if;
    if jsonb_typeof(s -> 'maxLength') = 'number' and length(v #>> '{}') > (s ->> 'maxLength')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', format('must NOT have more than %s characters', s ->> 'maxLength'));
    end if;
    if jsonb_typeof(s -> 'pattern') = 'string' and not (v #>> '{}') ~ (s ->> 'pattern') then
      problems := problems || jsonb_build_object('path', here, 'message', format('must match pattern "%s"', s ->> 'pattern'));
    end if;
  elsif jsonb_typeof(v) = 'array' then
    if jsonb_typeof(s -> 'minItems') = 'number' and jsonb_array_length(v) < (s ->> 'minItems')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', format('must NOT have fewer than %s items', s ->> 'minItems'));
    end if;
    if jsonb_typeof(s -> 'maxItems') = 'number' and jsonb_array_length(v) > (s ->> 'maxItems')::numeric then
      problems := problems || jsonb_build_object('path', here, 'message', format('must NOT have more than %s items', s ->> 'maxItems'));
    end if;
    if s -> 'uniqueItems' = 'true' and (select count(distinct e) from jsonb_array_elements(v) e) < jsonb_array_length(v) then
      problems := problems || jsonb_build_object('path', here, 'message', 'must NOT have duplicate items');
    end if;
    if jsonb_typeof(s -> 'items') in ('object', 'boolean') then
      for i in 0 .. jsonb_array_length(v) - 1 loop
        problems := problems || baton_private.schema_problems(s -> 'items', v -> i, at || '/' || i);
      end loop;
    end if;
  elsif jsonb_typeof(v) = 'object' then
    if jsonb_typeof(s -> 'required') = 'array' then
      for k in select jsonb_array_elements_text(s -> 'required') loop
        if not v ? k then
          problems := problems || jsonb_build_object('path', here, 'message', format('must have required property ''%s''', k));
        end if;
      end loop;
    end if;
    for k, sub in select key, value from jsonb_each(case when jsonb_typeof(s -> 'properties') = 'object' then s -> 'properties' else '{}' end) loop
      if v ? k then
        problems := problems || baton_private.schema_problems(sub, v -> k, at || '/' || replace(replace(k, '~', '~0'), '/', '~1'));
      end if;
    end loop;
    if s ? 'additionalProperties' then
      for k in select key from jsonb_each(v) where not coalesce(s -> 'properties', '{}') ? key loop
        if s -> 'additionalProperties' = 'false' then
          problems := problems || jsonb_build_object('path', here, 'message', 'must NOT have additional properties');
        else
          problems := problems || baton_private.schema_problems(s -> 'additionalProperties', v -> k, at || '/' || replace(replace(k, '~', '~0'), '/', '~1'));
        end if;
      end loop;
    end if;
  end if;
  for sub in select value from jsonb_array_elements(case when jsonb_typeof(s -> 'allOf') = 'array' then s -> 'allOf' else '[]' end) loop
    problems := problems || baton_private.schema_problems(sub, v, at);
  end loop;
  if jsonb_typeof(s -> 'anyOf') = 'array' then
    if not exists (select from jsonb_array_elements(s -> 'anyOf') x where baton_private.schema_problems(x, v, at) = '[]') then
      problems := problems || jsonb_build_object('path', here, 'message', 'must match a schema in anyOf');
    end if;
  end if;
  if jsonb_typeof(s -> 'oneOf') = 'array' then
    select count(*) into matched from jsonb_array_elements(s -> 'oneOf') x where baton_private.schema_problems(x, v, at) = '[]';
    if matched <> 1 then
      problems := problems || jsonb_build_object('path', here, 'message', 'must match exactly one schema in oneOf');
    end if;
  end if;
  if jsonb_typeof(s -> 'not') in ('object', 'boolean') then
    if baton_private.schema_problems(s -> 'not', v, at) = '[]' then
      problems := problems || jsonb_build_object('path', here, 'message', 'must NOT be valid');
    end if;
  end if;
  return problems;
end
$$;
revoke all on function baton_private.schema_problems(jsonb, jsonb, text) from public, anon, authenticated;
comment on function baton_private.schema_problems(jsonb, jsonb, text) is 'What is wrong with the JSON value v against the JSON Schema s (the keywords of schema_keywords), as [{path, message}] with JSON Pointers and Ajv''s words; empty when it matches.';

-- A hand-off declares only schemas the database can check.
create or replace function baton_private.check_expected_outputs(outputs jsonb)
returns void
language plpgsql immutable set search_path = ''
as $$
declare
  output jsonb;
  unknown text[];
  example constant text := 'Declare e.g. [{"name": "report.json", "media_type": "application/json", "required": true, "json_schema": {...}}].';
begin
  if jsonb_typeof(outputs) <> 'array' or jsonb_array_length(outputs) > 32 then
    raise exception 'expected_outputs must be an array of at most 32 outputs' using errcode = 'BT005', hint = example;
  end if;
  for output in select value from jsonb_array_elements(outputs) loop
    if jsonb_typeof(output) <> 'object' or jsonb_typeof(output -> 'name') is distinct from 'string'
       or not baton_private.is_artifact_name(output ->> 'name') then
      raise exception 'each expected output needs a "name" that is a file name, got %', left(output::text, 100) using errcode = 'BT005', hint = example;
    end if;
    if output ? 'required' and jsonb_typeof(output -> 'required') <> 'boolean'
       or output ? 'media_type' and jsonb_typeof(output -> 'media_type') <> 'string'
       or output ? 'json_schema' and jsonb_typeof(output -> 'json_schema') <> 'object' then
      raise exception 'expected output "%": required must be a boolean, media_type a string, json_schema an object', output ->> 'name'
        using errcode = 'BT005', hint = example;
    end if;
    unknown := baton_private.schema_unknown_keywords(output -> 'json_schema');
    if cardinality(unknown) > 0 then
      raise exception 'expected output "%": its json_schema uses % that the database does not check', output ->> 'name',
        (select string_agg(distinct u, ', ') from unnest(unknown) u)
        using errcode = 'BT005',
              hint = 'Write the schema with ' || array_to_string(baton_private.schema_keywords(), ', ') || ' (docs/structured-handoffs.md).';
    end if;
  end loop;
end
$$;

-- The schema a task expects of an artifact, checked as it is attached: JSON, and matching.
create function baton_private.check_artifact_schema(t public.task_handoffs, p_name text, p_media_type text, p_content bytea)
returns void
language plpgsql stable set search_path = ''
as $$
declare
  expected jsonb := (select o -> 'json_schema' from jsonb_array_elements(t.expected_outputs) o where o ->> 'name' = p_name limit 1);
  problems jsonb;
  value jsonb;
  mt text := lower(split_part(coalesce(p_media_type, ''), ';', 1));
begin
  -- A linked artifact's content is elsewhere: what it holds is not the database's to read.
  if expected is null or p_content is null then return; end if;
  begin
    value := convert_from(p_content, 'UTF8')::jsonb;
  exception when others then
    problems := jsonb_build_array(jsonb_build_object('path', '', 'message', 'not valid JSON: ' || sqlerrm));
  end;
  if problems is null and not (mt = 'application/json' or mt like '%+json') then
    problems := jsonb_build_array(jsonb_build_object('path', '', 'message', format('media type %s is not JSON', p_media_type)));
  end if;
  problems := coalesce(problems, baton_private.schema_problems(expected, value));
  if problems <> '[]' then
    raise exception 'artifact "%" does not match the schema task % expects: %', p_name, left(t.id::text, 8),
      (select string_agg((p ->> 'path') || ' ' || (p ->> 'message'), '; ') from jsonb_array_elements(problems) p)
      using errcode = 'BT019', detail = problems::text, hint = 'Fix the listed problems and attach it again.';
  end if;
end
$$;
revoke all on function baton_private.check_artifact_schema(public.task_handoffs, text, text, bytea) from public, anon, authenticated;
comment on function baton_private.check_artifact_schema(public.task_handoffs, text, text, bytea) is 'Refuses (BT019) an artifact whose task expects a json_schema of it and that is not JSON or does not match; the detail holds the problems as JSON.';

create or replace function baton_private.attach_artifact(p_task_id uuid, p_name text, p_media_type text default 'application/octet-stream',
                                                        p_content bytea default null, p_uri text default null, p_sha256 text default null,
                                                        p_size_bytes bigint default null)
returns public.task_artifacts
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  a public.task_artifacts;
begin
  -- Any process of the holding agent may attach; the claim token fences outcomes, not outputs.
  perform baton_private.check_holder(t, me, t.claim_token);
  perform baton_private.check_artifact_schema(t, p_name, coalesce(p_media_type, 'application/octet-stream'), p_content);
  insert into public.task_artifacts (task_id, name, media_type, content, uri, sha256, size_bytes, producer)
  values (t.id, p_name, coalesce(p_media_type, 'application/octet-stream'), p_content, p_uri, p_sha256, p_size_bytes, me)
  on conflict (task_id, name) do update
    set media_type = excluded.media_type, content = excluded.content, uri = excluded.uri, sha256 = excluded.sha256,
        size_bytes = excluded.size_bytes, producer = excluded.producer, created_at = now()
  returning * into a;
  return a;
end
$$;
