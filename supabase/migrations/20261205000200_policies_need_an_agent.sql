-- Row-level security shows nothing to a caller that is no agent, on its own.
--
-- The request check refuses a token without an agent_id on every relation Baton serves, but it leaves
-- rpc/* paths to the RPCs, and Supabase serves /graphql/v1 as PostgREST's rpc/graphql: wherever
-- pg_graphql is on, a user who signed up through the project's Auth (open by default) read the agent
-- registry, the settings, the transitions, capability-free broadcasts with their history and
-- artifacts, and messages to everyone, through policies that were `using (true)` or that read a
-- missing agent's capabilities as none. Now every policy needs an agent, whatever path reaches the
-- table (test/rules.enumerate.test.ts, "row-level security alone").

alter policy "Agents can see every registered agent" on public.agents
  using ((select baton_private.current_agent_id()) is not null);

alter policy "Agents can read the settings" on public.baton_settings
  using ((select baton_private.current_agent_id()) is not null);

alter policy "Agents can read the allowed transitions" on public.task_status_transitions
  using ((select baton_private.current_agent_id()) is not null);

-- The same rule as baton_private.can_see_task, written out so that the planner can use the indexes.
alter policy "Agents can view tasks they sent, hold, are addressed, or could claim" on public.task_handoffs
  using (
    from_agent = (select baton_private.current_agent_id())
    or to_agent = (select baton_private.current_agent_id())
    or claimed_by = (select baton_private.current_agent_id())
    or (to_agent is null
        and (select baton_private.current_agent_id()) is not null
        and required_capabilities <@ (select baton_private.agent_capabilities(baton_private.current_agent_id())))
  );

alter policy "Agents can read messages from them, to them, or to everyone" on public.agent_messages
  using (
    from_agent = (select baton_private.current_agent_id())
    or to_agent = (select baton_private.current_agent_id())
    or (to_agent is null and (select baton_private.current_agent_id()) is not null)
  );
