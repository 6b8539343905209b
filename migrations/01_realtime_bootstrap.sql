-- The parts of Supabase Realtime's schema that Baton's migrations use, for a bare Postgres: the
-- `realtime.messages` table whose row-level security decides who may join a private channel,
-- `realtime.topic()`, and `realtime.send()`. A hosted project has all of them, and then nothing here
-- runs. On the embedded stack, `realtime.send()` hands the message to the gateway's Realtime server
-- through NOTIFY; the hosted one stores it for Realtime to deliver.

do $$
begin
  if not exists (select from pg_catalog.pg_namespace where nspname = 'realtime') then
    create schema realtime;
    grant usage on schema realtime to anon, authenticated, service_role;
  end if;

  if pg_catalog.to_regclass('realtime.messages') is null then
    create table realtime.messages (
      id uuid not null default gen_random_uuid() primary key,
      topic text not null,
      extension text not null,
      payload jsonb,
      event text,
      private boolean default false,
      inserted_at timestamp without time zone not null default now(),
      updated_at timestamp without time zone not null default now()
    );
    alter table realtime.messages enable row level security;
    grant select, insert on realtime.messages to anon, authenticated, service_role;
  end if;

  if pg_catalog.to_regprocedure('realtime.topic()') is null then
    create function realtime.topic() returns text
    language sql stable
    as $fn$ select nullif(current_setting('realtime.topic', true), '') $fn$;
    grant execute on function realtime.topic() to anon, authenticated, service_role;
  end if;

  if pg_catalog.to_regprocedure('realtime.send(jsonb, text, text, boolean)') is null then
    create function realtime.send(payload jsonb, event text, topic text, private boolean default true) returns void
    language sql volatile
    as $fn$
      select pg_catalog.pg_notify('realtime_broadcast',
        pg_catalog.json_build_object('topic', topic, 'event', event, 'payload', payload, 'private', private)::text)
    $fn$;
  end if;
end
$$;
