-- Structured hand-offs: the artifacts a task produces, the inputs it works from, and its lineage.

create table public.task_artifacts (
  id uuid primary key default gen_random_uuid(),
  task_id uuid not null references public.task_handoffs (id) on delete cascade,
  name text not null,
  media_type text not null default 'application/octet-stream',
  size_bytes bigint,
  sha256 text,
  content bytea,
  uri text,
  producer text not null references public.agents (id),
  created_at timestamptz not null default now(),
  constraint task_artifacts_one_name_per_task unique (task_id, name),
  constraint task_artifacts_content_or_uri check ((content is null) <> (uri is null))
);
alter table public.task_artifacts enable row level security;
comment on table public.task_artifacts is 'What tasks produce: inline content (at most 1 MiB) or a link (uri), with size and SHA-256. Visible to whoever may see the task; written only by its holder (attach_artifact).';
comment on column public.task_artifacts.name is 'A file name, unique within the task; attaching the same name again replaces it.';
comment on column public.task_artifacts.sha256 is 'Hex SHA-256 of the content, computed by the database for inline content; readers check it.';
comment on column public.task_artifacts.size_bytes is 'Size of the content in bytes, computed by the database for inline content.';
comment on column public.task_artifacts.uri is 'Where an artifact too large to keep inline lives (sha256 and size_bytes then come from the producer).';
comment on column public.task_artifacts.producer is 'The agent that attached it: the task''s holder at the time.';
create index task_artifacts_producer_idx on public.task_artifacts (producer);

create function baton_private.tg_task_artifacts__prepare() returns trigger
language plpgsql set search_path = ''
as $$
begin
  if not baton_private.is_artifact_name(new.name) then
    raise exception 'invalid artifact name "%"', left(new.name, 100)
      using errcode = 'BT005', hint = 'Use a file name: letters, digits, ., - and _, up to 200 characters (e.g. report.json).';
  end if;
  if new.media_type !~ '^[a-z]+/[A-Za-z0-9.+_-]+(;.*)?$' or length(new.media_type) > 200 then
    raise exception 'invalid media type "%"', left(new.media_type, 100)
      using errcode = 'BT005', hint = 'Use a media type such as application/json or text/markdown.';
  end if;
  if new.content is not null then
    if octet_length(new.content) > 1048576 then
      raise exception 'artifact "%" is % bytes; inline content is limited to 1 MiB', new.name, octet_length(new.content)
        using errcode = 'BT005', hint = 'Store it elsewhere and attach its uri instead.';
    end if;
    new.size_bytes := octet_length(new.content);
    new.sha256 := encode(sha256(new.content), 'hex');
  else
    if new.uri !~ '^[a-z][a-z0-9+.-]*://' or length(new.uri) > 2000 then
      raise exception 'artifact "%" needs content or a uri such as https://…', new.name
        using errcode = 'BT005', hint = 'Give inline content (up to 1 MiB) or a uri.';
    end if;
    if new.sha256 is not null and new.sha256 !~ '^[0-9a-f]{64}$' then
      raise exception 'the sha256 of artifact "%" must be 64 lower-case hex digits', new.name using errcode = 'BT005', hint = 'Give the hex SHA-256 of the content at the uri, or none.';
    end if;
  end if;
  return new;
end
$$;
create trigger prepare before insert or update on public.task_artifacts
  for each row execute function baton_private.tg_task_artifacts__prepare();

revoke all on table public.task_artifacts from anon, authenticated;
grant select on table public.task_artifacts to authenticated;
grant select, insert, update, delete on table public.task_artifacts to service_role;
create policy "Agents can view the artifacts of tasks they can view" on public.task_artifacts
  for select to authenticated
  using (exists (select from public.task_handoffs t where t.id = task_id));

create function public.attach_artifact(
  p_task_id uuid,
  p_name text,
  p_media_type text default 'application/octet-stream',
  p_content bytea default null,
  p_uri text default null,
  p_sha256 text default null,
  p_size_bytes bigint default null
) returns public.task_artifacts
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  a public.task_artifacts;
begin
  -- Any process of the holding agent may attach; the claim token fences outcomes, not outputs.
  perform baton_private.check_holder(t, me, t.claim_token);
  insert into public.task_artifacts (task_id, name, media_type, content, uri, sha256, size_bytes, producer)
  values (t.id, p_name, coalesce(p_media_type, 'application/octet-stream'), p_content, p_uri, p_sha256, p_size_bytes, me)
  on conflict (task_id, name) do update
    set media_type = excluded.media_type, content = excluded.content, uri = excluded.uri, sha256 = excluded.sha256,
        size_bytes = excluded.size_bytes, producer = excluded.producer, created_at = now()
  returning * into a;
  return a;
end
$$;
comment on function public.attach_artifact is 'The holder attaches (or replaces) an artifact of a task it holds: inline content up to 1 MiB, or a uri.';

-- Inputs named at hand-off must exist, on tasks the sender can see.
create function baton_private.check_inputs(inputs jsonb, agent text) returns void
language plpgsql stable security definer set search_path = ''
as $$
declare
  input jsonb;
  source public.task_handoffs;
begin
  if jsonb_typeof(inputs) <> 'array' or jsonb_array_length(inputs) > 64 then
    raise exception 'input_artifacts must be an array of at most 64 {task_id, name}' using errcode = 'BT005', hint = 'Name inputs as [{"task_id": "…", "name": "report.json"}].';
  end if;
  for input in select value from jsonb_array_elements(inputs) loop
    if jsonb_typeof(input -> 'name') is distinct from 'string'
       or coalesce(input ->> 'task_id', '') !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      raise exception 'each input needs a task_id (a UUID) and a name, got %', left(input::text, 100)
        using errcode = 'BT005', hint = 'Name inputs as [{"task_id": "…", "name": "report.json"}].';
    end if;
    select * into source from public.task_handoffs where id = (input ->> 'task_id')::uuid;
    if not found or not baton_private.can_see_task(source, agent)
       or not exists (select from public.task_artifacts a where a.task_id = source.id and a.name = input ->> 'name') then
      raise exception 'no artifact "%" on a task % that agent "%" can see', input ->> 'name', input ->> 'task_id', agent
        using errcode = 'BT002', hint = 'List a task''s artifacts with: baton artifacts <task>.';
    end if;
  end loop;
end
$$;

-- What a task's holder works from: the artifacts named as its inputs, and those of its parent chain.
create function public.task_inputs(p_task_id uuid) returns setof public.task_artifacts
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
begin
  return query
    select a.* from public.task_artifacts a
    where a.task_id in (select c.id from baton_private.ancestor_ids(t.id) c)
       or exists (
         select from jsonb_array_elements(t.input_artifacts) i
         where (i ->> 'task_id')::uuid = a.task_id and i ->> 'name' = a.name
       )
    order by a.created_at;
end
$$;
comment on function public.task_inputs is 'The artifacts a task works from: its named inputs and the artifacts of its parent chain, for anyone who may see the task.';

-- A result may ask for a follow-up: {handoff: {to_agent | capability, title, reason, context, task_type?,
-- payload?, expected_outputs?}}. It becomes a child of the completed task, sent by its holder, with the
-- task's artifacts as inputs; created with the completion, so it is never lost nor made twice.
create function baton_private.create_follow_up(parent public.task_handoffs, request jsonb, agent text) returns uuid
language plpgsql security definer set search_path = ''
as $$
declare
  child uuid;
begin
  if request ? 'to_agent' and not exists (select from public.agents a where a.id = request ->> 'to_agent') then
    raise exception 'the follow-up names no agent "%"', request ->> 'to_agent'
      using errcode = 'BT002', hint = 'Name a registered agent, or a capability instead.';
  end if;
  if request ? 'payload' and jsonb_typeof(request -> 'payload') <> 'object' then
    raise exception 'the follow-up''s payload must be a JSON object' using errcode = 'BT005', hint = 'Pass {"payload": {...}} or none.';
  end if;
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
  on conflict (from_agent, idempotency_key) do nothing
  returning id into child;
  return child;
end
$$;

-- Lineage ---------------------------------------------------------------------------------------------

create view public.task_lineage with (security_invoker = true) as
  select t.id, t.root_task_id, t.parent_task_id, t.depth, t.title, t.status, t.status_reason,
         t.from_agent, t.to_agent, t.required_capabilities, t.claimed_by as producer, t.attempts, t.progress_message, t.progress_percent,
         t.created_at, t.started_at, t.completed_at,
         t.input_artifacts as inputs,
         coalesce((
           select jsonb_agg(jsonb_build_object('name', a.name, 'media_type', a.media_type, 'size_bytes', a.size_bytes,
                                               'sha256', a.sha256, 'uri', a.uri, 'producer', a.producer) order by a.name)
           from public.task_artifacts a where a.task_id = t.id), '[]') as outputs,
         t.result -> 'status' as result_status,
         t.result ->> 'summary' as summary
  from public.task_handoffs t;
comment on view public.task_lineage is 'Every task with its place in its chain, producer, inputs, outputs (artifact names, sizes, hashes), status and times. Filter by root_task_id to see one chain.';
revoke all on public.task_lineage from anon, authenticated;
grant select on public.task_lineage to authenticated, service_role;

create function public.task_chain(p_task_id uuid) returns setof public.task_lineage
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.visible_task(p_task_id, me);
begin
  return query select * from public.task_lineage l where l.root_task_id = t.root_task_id order by l.depth, l.created_at;
end
$$;
comment on function public.task_chain is 'The whole chain (root to leaves) of a task the caller may see, as task_lineage rows.';

revoke all on function public.attach_artifact, public.task_inputs, public.task_chain from public, anon;
grant execute on function public.attach_artifact, public.task_inputs, public.task_chain to authenticated;
