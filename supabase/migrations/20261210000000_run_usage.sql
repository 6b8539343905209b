-- What each run of a task spends: the tokens and money a coding agent (Claude Code, Codex, Gemini CLI)
-- or any executor reports for an attempt, by model, kept with the task and readable by whoever may see
-- it. The chain's total is one call away (chain_usage). Budgets will read the same rows.
--
-- One row per task, attempt and model: a run that asks and is resumed in the same attempt adds to the
-- same row. The attempt is the task's own count at the time of the report, never the caller's word.

create table public.task_runs (
  task_id uuid not null references public.task_handoffs (id) on delete cascade,
  attempt integer not null,
  model text not null,
  agent_id text not null references public.agents (id),
  root_task_id uuid not null,
  runtime text not null,
  session_id text,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  cached_tokens bigint not null default 0,
  turns integer not null default 0,
  cost_usd numeric(14, 6),
  reports integer not null default 0,
  started_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (task_id, attempt, model),
  constraint task_runs_counts_not_negative check (input_tokens >= 0 and output_tokens >= 0 and cached_tokens >= 0 and turns >= 0 and (cost_usd is null or cost_usd >= 0)),
  constraint task_runs_names_bounded check (pg_catalog.length(model) between 1 and 200 and pg_catalog.length(runtime) between 1 and 64 and (session_id is null or pg_catalog.length(session_id) <= 200))
);
alter table public.task_runs enable row level security;

create index task_runs_root_idx on public.task_runs (root_task_id);
create index task_runs_agent_idx on public.task_runs (agent_id, updated_at);

revoke all on table public.task_runs from anon, authenticated;
grant select on table public.task_runs to authenticated;
grant all on table public.task_runs to service_role;

comment on table public.task_runs is 'What each attempt of a task spent, by model: input (uncached), output and cached tokens, turns, and the cost where the runtime reports one, with the runtime and its session id. Written by the task''s holder (record_usage); visible to whoever may see the task.';
comment on column public.task_runs.input_tokens is 'Input tokens not read from a cache.';
comment on column public.task_runs.cached_tokens is 'Input tokens read from the provider''s cache.';
comment on column public.task_runs.cost_usd is 'The cost the runtime reported (Claude Code does; Codex and Gemini CLI report tokens only: null).';
comment on column public.task_runs.session_id is 'The runtime''s session (or thread) id for this attempt: a question''s answer resumes it.';
comment on column public.task_runs.reports is 'How many runs of the runtime added to this row (a question answered resumes the session: one more).';

create policy "Agents can view the runs of tasks they can view" on public.task_runs
  for select to authenticated
  using (exists (select from public.task_handoffs t where t.id = task_runs.task_id));

-- Who may report: the holder of the current claim (its token), or, once the task is final (cancelled
-- while the agent ran, say), the agent that held it last: what a stopped run spent is still spent.
create function baton_private.record_usage(
  p_task_id uuid, p_claim_token uuid, p_runtime text, p_model text,
  p_input_tokens bigint default 0, p_output_tokens bigint default 0, p_cached_tokens bigint default 0,
  p_turns integer default 0, p_cost_usd numeric default null, p_session_id text default null
) returns public.task_runs
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
  r public.task_runs;
begin
  if t.status in ('completed', 'failed', 'rejected', 'cancelled') then
    if t.claimed_by is distinct from me then
      raise exception 'task % is %, and agent "%" did not hold it last', t.id, t.status, me
        using errcode = 'BT003', hint = 'Only the agent that ran a task reports what it spent.';
    end if;
  else
    perform baton_private.check_holder(t, me, p_claim_token);
  end if;
  perform baton_private.require_text(p_runtime, 'the runtime', 'Name what ran the task: claude, codex, gemini, openclaw, ...');
  perform baton_private.require_text(p_model, 'the model', 'Name the model the tokens were spent on.');
  if least(p_input_tokens, p_output_tokens, p_cached_tokens, p_turns::bigint) < 0 or p_cost_usd < 0 then
    raise exception 'usage of task % has a negative count', t.id
      using errcode = 'BT005', hint = 'Report tokens, turns and cost as counts of zero or more.';
  end if;
  insert into public.task_runs as x (task_id, attempt, model, agent_id, root_task_id, runtime, session_id,
                                     input_tokens, output_tokens, cached_tokens, turns, cost_usd, reports)
  values (t.id, t.attempts, p_model, me, coalesce(t.root_task_id, t.id), p_runtime, p_session_id,
          coalesce(p_input_tokens, 0), coalesce(p_output_tokens, 0), coalesce(p_cached_tokens, 0),
          coalesce(p_turns, 0), p_cost_usd, 1)
  on conflict (task_id, attempt, model) do update set
    input_tokens = x.input_tokens + excluded.input_tokens,
    output_tokens = x.output_tokens + excluded.output_tokens,
    cached_tokens = x.cached_tokens + excluded.cached_tokens,
    turns = x.turns + excluded.turns,
    cost_usd = case when x.cost_usd is null and excluded.cost_usd is null then null
                    else coalesce(x.cost_usd, 0) + coalesce(excluded.cost_usd, 0) end,
    session_id = coalesce(excluded.session_id, x.session_id),
    runtime = excluded.runtime,
    reports = x.reports + 1,
    updated_at = pg_catalog.now()
  returning * into r;
  return r;
end
$$;
revoke all on function baton_private.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) from public, anon;
grant execute on function baton_private.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) to authenticated, service_role;
comment on function baton_private.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) is 'Adds what one run of a task spent on one model to the task''s current attempt: by the holder of the claim, or by the agent that held the task last once it is final.';

create function public.record_usage(
  p_task_id uuid, p_claim_token uuid, p_runtime text, p_model text,
  p_input_tokens bigint default 0, p_output_tokens bigint default 0, p_cached_tokens bigint default 0,
  p_turns integer default 0, p_cost_usd numeric default null, p_session_id text default null
) returns public.task_runs
language plpgsql security invoker set search_path = ''
as $$begin return baton_private.record_usage($1, $2, $3, $4, $5, $6, $7, $8, $9, $10); end$$;
revoke all on function public.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) from public, anon;
grant execute on function public.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) to authenticated, service_role;
comment on function public.record_usage(uuid, uuid, text, text, bigint, bigint, bigint, integer, numeric, text) is 'Adds what one run of a task spent on one model to the task''s current attempt: by the holder of the claim, or by the agent that held the task last once it is final.';

-- The spend of a task and everything under it (follow-ups, fan-out parts and joins, at any depth), by
-- model, for a caller who may see the task (or the operator): the sender pays for the chain, whoever
-- ran its parts.
create function baton_private.chain_usage(p_task_id uuid)
returns table (model text, runtime text, tasks integer, attempts integer, input_tokens bigint, output_tokens bigint,
               cached_tokens bigint, turns bigint, cost_usd numeric)
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  t public.task_handoffs;
begin
  if me is null and coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  if me is null then
    select * into t from public.task_handoffs where id = p_task_id;
    if not found then
      raise exception 'no task %', p_task_id using errcode = 'BT002', hint = 'Check the id: baton tasks --all lists the tasks.';
    end if;
  else
    t := baton_private.visible_task(p_task_id, me);
  end if;
  return query
    with recursive below (id) as (
      select t.id
      union
      select x.id from below b join public.task_handoffs x on x.parent_task_id = b.id
    )
    select r.model, pg_catalog.min(r.runtime), pg_catalog.count(distinct r.task_id)::integer, pg_catalog.count(*)::integer,
           pg_catalog.sum(r.input_tokens)::bigint, pg_catalog.sum(r.output_tokens)::bigint, pg_catalog.sum(r.cached_tokens)::bigint,
           pg_catalog.sum(r.turns)::bigint, pg_catalog.sum(r.cost_usd)
    from public.task_runs r
    where r.root_task_id = coalesce(t.root_task_id, t.id) and r.task_id in (select id from below)
    group by r.model
    order by r.model;
end
$$;
revoke all on function baton_private.chain_usage(uuid) from public, anon;
grant execute on function baton_private.chain_usage(uuid) to authenticated, service_role;
comment on function baton_private.chain_usage(uuid) is 'What a task and everything under it spent, by model, for a caller who may see the task, or the operator.';

create function public.chain_usage(p_task_id uuid)
returns table (model text, runtime text, tasks integer, attempts integer, input_tokens bigint, output_tokens bigint,
               cached_tokens bigint, turns bigint, cost_usd numeric)
language plpgsql stable security invoker set search_path = ''
as $$begin return query select * from baton_private.chain_usage($1); end$$;
revoke all on function public.chain_usage(uuid) from public, anon;
grant execute on function public.chain_usage(uuid) to authenticated, service_role;
comment on function public.chain_usage(uuid) is 'What a task and everything under it spent, by model, for a caller who may see the task, or the operator.';

-- The request check serves the new table (test/rules.enumerate.test.ts holds it to every rule).
create or replace function baton_private.baton_relations() returns text[]
language plpgsql immutable set search_path = ''
as $$
begin
  return array[
    -- tables
    'agents', 'agent_tokens', 'agent_messages', 'agent_usage', 'baton_settings', 'recurring_handoffs',
    'task_handoffs', 'task_events', 'task_artifacts', 'task_declines', 'task_status_transitions', 'task_runs',
    -- views
    'agent_presence', 'task_lineage', 'dead_letters', 'waiting_tasks', 'stuck_claims', 'task_queue', 'task_counts',
    'task_throughput'];
end
$$;
