-- Artifacts: named outputs of a task (content or a link, with its hash and size), attached by the
-- holder, checked against the outputs the sender expected, and read by later tasks as inputs.

create table public.task_artifacts (
  id uuid not null default gen_random_uuid(),
  task_id uuid not null,
  name text not null,
  media_type text not null default 'application/octet-stream'::text,
  size_bytes bigint,
  sha256 text,
  content bytea,
  uri text,
  producer text not null,
  created_at timestamp with time zone not null default now(),
  constraint task_artifacts_content_or_uri CHECK (((content IS NULL) <> (uri IS NULL))),
  constraint task_artifacts_one_name_per_task UNIQUE (task_id, name),
  constraint task_artifacts_pkey PRIMARY KEY (id),
  constraint task_artifacts_producer_fkey FOREIGN KEY (producer) REFERENCES public.agents(id),
  constraint task_artifacts_task_id_fkey FOREIGN KEY (task_id) REFERENCES public.task_handoffs(id) ON DELETE CASCADE
);
alter table public.task_artifacts enable row level security;

revoke all on table public.task_artifacts from anon, authenticated;
grant select on table public.task_artifacts to authenticated;
grant select, insert, update, delete on table public.task_artifacts to service_role;

comment on table public.task_artifacts is 'What tasks produce: inline content (at most 1 MiB) or a link (uri), with size and SHA-256. Visible to whoever may see the task; written only by its holder (attach_artifact).';
comment on column public.task_artifacts.name is 'A file name, unique within the task; attaching the same name again replaces it.';
comment on column public.task_artifacts.sha256 is 'Hex SHA-256 of the content, computed by the database for inline content; readers check it.';
comment on column public.task_artifacts.size_bytes is 'Size of the content in bytes, computed by the database for inline content.';
comment on column public.task_artifacts.uri is 'Where an artifact too large to keep inline lives (sha256 and size_bytes then come from the producer).';
comment on column public.task_artifacts.producer is 'The agent that attached it: the task''s holder at the time.';

create index task_artifacts_producer_idx on public.task_artifacts (producer);

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

revoke all on function public.attach_artifact from public, anon;
grant execute on function public.attach_artifact to authenticated;

comment on function public.attach_artifact is 'The holder attaches (or replaces) an artifact of a task it holds: inline content up to 1 MiB, or a uri.';

-- Artifact names are file names: letters, digits, dot, dash and underscore.
create function baton_private.is_artifact_name(value text) returns boolean
language sql immutable set search_path = ''
as $$ select value ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$' $$;

grant execute on function baton_private.is_artifact_name(text) to anon, authenticated, service_role;

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

create trigger step1_prepare before insert or update on public.task_artifacts
  for each row execute function baton_private.tg_task_artifacts__prepare();

create policy "Agents can view the artifacts of tasks they can view" on public.task_artifacts
  for select to authenticated
  using (exists (select from public.task_handoffs t where t.id = task_id));
