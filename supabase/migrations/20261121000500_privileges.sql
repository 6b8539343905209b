-- Internals run only inside Baton's own functions and policies. API roles may execute just the helpers
-- that row-level security policies, validation triggers and PostgREST's pre-request hook call as the
-- requesting role.

revoke execute on all functions in schema baton_private from public;
alter default privileges in schema baton_private revoke execute on functions from public;

grant execute on function
  baton_private.current_agent_id(),
  baton_private.agent_capabilities(text),
  baton_private.can_see_message(uuid, text),
  baton_private.is_slug(text),
  baton_private.is_artifact_name(text),
  baton_private.check_expected_outputs(jsonb),
  baton_private.check_result(jsonb),
  baton_private.check_lease(integer),
  baton_private.is_online(public.agents),
  baton_private.check_request()
  to anon, authenticated, service_role;
