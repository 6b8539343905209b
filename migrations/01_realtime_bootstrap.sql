-- The parts of Supabase Realtime's schema that Baton's migrations use, for a bare Postgres: the
-- `realtime.messages` table whose row-level security decides who may join a private channel,
-- `realtime.topic()`, and `realtime.send()`. A hosted project has all of them, and then nothing here
-- runs; the hosted `realtime.send()` stores the message for Realtime to deliver.
--
-- On the embedded stack, `realtime.send()` puts the message in `realtime.outbox`, which the gateway's
-- Realtime server drains, in order, while messages come. Only when it has found the outbox empty
-- does it ring for a wake-up: it sets `realtime.doorbell.armed`, and the next send raises a NOTIFY.
-- A NOTIFY on every send would serialize the commits of every transaction that sends (Postgres holds
-- one lock for the whole database from a notifying transaction's pre-commit to its end, WAL flush
-- included): with 20 connections handing off singly, a quarter fewer hand-offs/s (docs/benchmarks.md).
-- Both tables are unlogged: after a crash they are empty, and the Realtime server lets every client
-- go, as it does whenever its connection to the database is made again, so each catches up by itself.
--
-- Shaped as hosted's, so that what hosted refuses is refused here too: `realtime.messages` is
-- partitioned and owned by `supabase_realtime_admin` (a stack made before this keeps its plain table),
-- and `realtime.send()` runs with its caller's rights and turns any error into a WARNING, as hosted's
-- does: a broadcast sent by a role that may not send is lost, with only a warning to say so.

do $$
declare
  send_source text;
begin
  if not exists (select from pg_catalog.pg_namespace where nspname = 'realtime') then
    create schema realtime;
    grant usage on schema realtime to anon, authenticated, service_role;
  end if;

  if not exists (select from pg_catalog.pg_roles where rolname = 'supabase_realtime_admin') then
    create role supabase_realtime_admin nologin noinherit;
  end if;

  if pg_catalog.to_regclass('realtime.messages') is null then
    create table realtime.messages (
      id uuid not null default gen_random_uuid(),
      topic text not null,
      extension text not null,
      payload jsonb,
      event text,
      private boolean default false,
      inserted_at timestamp without time zone not null default now(),
      updated_at timestamp without time zone not null default now(),
      primary key (id, inserted_at)
    ) partition by range (inserted_at);
    -- Hosted's Realtime makes a partition per day; the embedded one keeps no messages (its join check's
    -- probe is rolled back), so one default partition holds whatever passes through.
    create table realtime.messages_default partition of realtime.messages default;
    alter table realtime.messages enable row level security;
    alter table realtime.messages owner to supabase_realtime_admin;
    alter table realtime.messages_default owner to supabase_realtime_admin;
    grant select, insert on realtime.messages to anon, authenticated, service_role;
  end if;

  if pg_catalog.to_regprocedure('realtime.topic()') is null then
    create function realtime.topic() returns text
    language sql stable
    as $fn$ select nullif(current_setting('realtime.topic', true), '') $fn$;
    grant execute on function realtime.topic() to anon, authenticated, service_role;
  end if;

  -- The stack's own send is made, or made again over an earlier one of its own (each raises NOTIFY on
  -- the channel realtime_broadcast); a hosted project's is left alone.
  select p.prosrc into send_source from pg_catalog.pg_proc p
  where p.oid = pg_catalog.to_regprocedure('realtime.send(jsonb, text, text, boolean)');
  if send_source is null or send_source like '%realtime_broadcast%' then
    create unlogged table if not exists realtime.outbox (
      id bigint generated always as identity,
      message text not null
    );
    create unlogged table if not exists realtime.doorbell (
      id boolean primary key default true check (id),
      armed boolean not null default false
    );
    revoke all on realtime.outbox, realtime.doorbell from public, anon, authenticated, service_role;
    comment on table realtime.outbox is 'Broadcasts sent and not yet delivered by the embedded stack''s Realtime server, which drains it.';
    comment on table realtime.doorbell is 'Set by the embedded stack''s Realtime server when it found the outbox empty: the next realtime.send() wakes it with a NOTIFY.';

    create or replace function realtime.send(payload jsonb, event text, topic text, private boolean default true) returns void
    language plpgsql volatile security invoker set search_path = ''
    as $fn$
    begin
      begin
        insert into realtime.outbox (message)
        values (pg_catalog.json_build_object('topic', topic, 'event', event, 'payload', payload, 'private', private)::text);
        if exists (select from realtime.doorbell d where d.armed) then
          perform pg_catalog.pg_notify('realtime_broadcast', '');
        end if;
      exception when others then
        raise warning 'ErrorSendingBroadcastMessage: %', sqlerrm;
      end;
    end
    $fn$;
    -- Baton's triggers send as the owner of Baton's schema; no API role may broadcast by itself.
    revoke execute on function realtime.send(jsonb, text, text, boolean) from public, anon, authenticated;
  end if;
end
$$;
