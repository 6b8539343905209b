-- Which migration a database has reached (issue 74): `baton doctor` names it beside the package's own,
-- so that a user can tell which Baton a database was made for and whether its migrations are all
-- applied. The level is the newest version the Supabase CLI recorded as applied (`db push` records
-- every file, on the embedded stack and on a hosted project alike); null where no migration was
-- recorded there (a schema applied by hand).

create function baton_private.schema_level()
returns text
language plpgsql stable security definer set search_path = ''
as $$
declare
  level text;
begin
  if coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  if pg_catalog.to_regclass('supabase_migrations.schema_migrations') is null then
    return null;
  end if;
  execute 'select pg_catalog.max(version) from supabase_migrations.schema_migrations' into level;
  return level;
end
$$;
revoke all on function baton_private.schema_level() from public, anon;
grant execute on function baton_private.schema_level() to authenticated, service_role;
comment on function baton_private.schema_level() is 'The newest migration applied to this database (its version, as the Supabase CLI recorded it); null when none was recorded. For an agent or the operator.';

create function public.schema_level()
returns text
language plpgsql stable set search_path = ''
as $$begin return baton_private.schema_level(); end$$;
revoke all on function public.schema_level() from public, anon;
grant execute on function public.schema_level() to authenticated, service_role;
comment on function public.schema_level() is 'The newest migration applied to this database (its version, as the Supabase CLI recorded it); null when none was recorded. For an agent or the operator.';
