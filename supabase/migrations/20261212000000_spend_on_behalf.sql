-- A daily cap covers what an agent spends and what is spent on its behalf (issue 63): the runs of the
-- tasks it handed to other agents count against its day as well as against the day of the agent that
-- ran them. Once the day reaches a cap the agent neither claims (BT018, as before) nor hands work on
-- (BT018 on every insert it makes, REST, RPC or batch, checked by one trigger); completing (with the
-- follow-up it names), answering and reading go on. And money in the budgets' words reads as money:
-- $0.70, not $0.700000.

alter table public.agent_daily_spend
  add column behalf_tokens bigint not null default 0,
  add column behalf_usd numeric(14, 6) not null default 0;
comment on table public.agent_daily_spend is 'What each agent spent per UTC day (tokens: input, cached and output; USD where reported): tokens and usd by its own runs, behalf_tokens and behalf_usd by other agents'' runs of tasks it handed them. The daily caps weigh the sum.';
comment on column public.agent_daily_spend.behalf_tokens is 'Tokens spent this day by other agents'' runs of tasks this agent sent.';
comment on column public.agent_daily_spend.behalf_usd is 'USD spent this day by other agents'' runs of tasks this agent sent (where reported).';

-- An amount of money as people write it: two decimals at least, four at most.
create function baton_private.usd_text(amount numeric)
returns text
language sql immutable set search_path = ''
as $$ select '$' || pg_catalog.to_char(pg_catalog.round(amount, 4), 'FM999999999990.0099') $$;
revoke all on function baton_private.usd_text(numeric) from public, anon, authenticated;

create or replace function baton_private.budget_text(b public.task_budgets)
returns text
language sql immutable set search_path = ''
as $$
  select pg_catalog.concat_ws(' and ',
    case when b.tokens_limit is not null then pg_catalog.format('%s of %s tokens', b.tokens_spent, b.tokens_limit) end,
    case when b.usd_limit is not null then pg_catalog.format('%s of %s', baton_private.usd_text(b.usd_spent), baton_private.usd_text(b.usd_limit)) end)
$$;

-- The day's spend of the agent that ran (its own) and of the agent that sent the task (on its behalf);
-- an agent that reaches a cap is capped until the next UTC midnight.
drop function baton_private.spend_daily(text, bigint, numeric);
create function baton_private.spend_daily(worker text, sender text, p_tokens bigint, p_usd numeric)
returns void
language plpgsql security definer set search_path = ''
as $$
declare
  today date := (pg_catalog.now() at time zone 'UTC')::date;
  who text;
  mine boolean;
  d public.agent_daily_spend;
begin
  -- The sender is charged apart only when it is another agent (a task sent to oneself is one's own).
  foreach who in array pg_catalog.array_remove(array[worker, nullif(sender, worker)], null) loop
    mine := who = worker;
    insert into public.agent_daily_spend as x (agent_id, day, tokens, usd, behalf_tokens, behalf_usd)
    values (who, today, case when mine then p_tokens else 0 end, case when mine then p_usd else 0 end,
            case when mine then 0 else p_tokens end, case when mine then 0 else p_usd end)
    on conflict (agent_id, day) do update set
      tokens = x.tokens + excluded.tokens, usd = x.usd + excluded.usd,
      behalf_tokens = x.behalf_tokens + excluded.behalf_tokens, behalf_usd = x.behalf_usd + excluded.behalf_usd
    returning * into d;
    update public.agents a set spend_capped_until = ((today + 1)::timestamp at time zone 'UTC')
    where a.id = who and a.spend_capped_until is distinct from ((today + 1)::timestamp at time zone 'UTC')
      and ((a.daily_token_cap is not null and d.tokens + d.behalf_tokens >= a.daily_token_cap)
        or (a.daily_usd_cap is not null and d.usd + d.behalf_usd >= a.daily_usd_cap));
  end loop;
end
$$;
revoke all on function baton_private.spend_daily(text, text, bigint, numeric) from public, anon, authenticated;

-- A cap the operator sets or changes weighs the day so far at once: set under it, the agent is capped
-- now; raised above it (or removed), the agent goes on now.
create function baton_private.tg_agents__daily_caps()
returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  today date := (pg_catalog.now() at time zone 'UTC')::date;
  d public.agent_daily_spend;
begin
  select * into d from public.agent_daily_spend x where x.agent_id = new.id and x.day = today;
  new.spend_capped_until := case
    when (new.daily_token_cap is not null and coalesce(d.tokens + d.behalf_tokens, 0) >= new.daily_token_cap)
      or (new.daily_usd_cap is not null and coalesce(d.usd + d.behalf_usd, 0) >= new.daily_usd_cap)
    then (today + 1)::timestamp at time zone 'UTC' end;
  -- Lifted: its daemon hears of it at once (it would otherwise wait for its slow safety-net poll).
  if old.spend_capped_until > pg_catalog.now() and new.spend_capped_until is null then
    perform realtime.send(jsonb_build_object('tasks', '[]'::jsonb), 'work', 'agent:' || new.id, true);
  end if;
  return new;
end
$$;
revoke all on function baton_private.tg_agents__daily_caps() from public, anon, authenticated;
create trigger daily_caps before update on public.agents
  for each row when (new.daily_token_cap is distinct from old.daily_token_cap or new.daily_usd_cap is distinct from old.daily_usd_cap)
  execute function baton_private.tg_agents__daily_caps();

-- record_usage, as before, with the spend counted on the sender's day too.
create or replace function baton_private.record_usage(
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
  spent bigint := coalesce(p_input_tokens, 0) + coalesce(p_output_tokens, 0) + coalesce(p_cached_tokens, 0);
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
  -- What the run spent counts against the budgets over the task, the agent's day and its sender's.
  if t.budget_id is not null then
    perform baton_private.spend_budget(t, spent, coalesce(p_cost_usd, 0), me);
  end if;
  perform baton_private.spend_daily(me, t.from_agent, spent, coalesce(p_cost_usd, 0));
  return r;
end
$$;

-- The agents capped now, apart from their rows: a hand-off reads this (almost always empty) table
-- rather than its sender's row in agents, which the sender's own requests keep updating (their
-- heartbeats); with 32 hand-offs in flight from one sender, reading that row cost measurably more
-- (bench:single). Kept by a trigger from agents.spend_capped_until, which stays the one place the cap
-- is set.
create table baton_private.spend_capped (
  agent_id text primary key references public.agents (id) on delete cascade,
  until timestamptz not null
);
revoke all on table baton_private.spend_capped from public, anon, authenticated;
insert into baton_private.spend_capped (agent_id, until)
  select a.id, a.spend_capped_until from public.agents a where a.spend_capped_until > pg_catalog.now();

create function baton_private.tg_agents__spend_capped()
returns trigger
language plpgsql security definer set search_path = ''
as $$
begin
  if new.spend_capped_until is null then
    delete from baton_private.spend_capped c where c.agent_id = new.id;
  else
    insert into baton_private.spend_capped as c (agent_id, until) values (new.id, new.spend_capped_until)
    on conflict (agent_id) do update set until = excluded.until;
  end if;
  return null;
end
$$;
revoke all on function baton_private.tg_agents__spend_capped() from public, anon, authenticated;
create trigger spend_capped after update on public.agents
  for each row when (new.spend_capped_until is distinct from old.spend_capped_until)
  execute function baton_private.tg_agents__spend_capped();

-- The rule for hand-offs: an agent at its daily cap hands nothing on, on any path (handoff,
-- handoff_tasks, retries, fan-out, REST), but for the follow-up its completion names. Checked once per
-- statement (a batch of a thousand costs one look); an operator's inserts are not capped.
create function baton_private.tg_task_handoffs__spend_cap()
returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  until timestamptz;
begin
  if me is null then
    return null;
  end if;
  select c.until into until from baton_private.spend_capped c where c.agent_id = me;
  -- Not capped: nothing more to read. (The query below, over the rows just made, is planned afresh at
  -- every call, as a query over a transition table is: only a capped agent's hand-offs pay for it.)
  if until is null or until <= pg_catalog.now() then
    return null;
  end if;
  -- The follow-up a completion names goes in with it: the work done is never refused for what it costs.
  if exists (
    select from created c
    where c.from_agent = me
      and not (c.idempotency_key = 'follow-up:' || c.parent_task_id and exists (
        select from public.task_handoffs p where p.id = c.parent_task_id and p.status = 'completed' and p.claimed_by = me))) then
    raise exception 'agent "%" reached its daily cap of spend and hands no work on until %', me, until
      using errcode = 'BT018',
            hint = 'The cap counts its own runs and the runs of the tasks it handed on; an operator can raise agents.daily_token_cap or daily_usd_cap.';
  end if;
  return null;
end
$$;
revoke all on function baton_private.tg_task_handoffs__spend_cap() from public, anon, authenticated;
create trigger spend_cap after insert on public.task_handoffs
  referencing new table as created
  for each statement execute function baton_private.tg_task_handoffs__spend_cap();

-- give_budget, as before, its refusal in money as people write it.
create or replace function baton_private.give_budget(t public.task_handoffs, p_tokens bigint, p_usd numeric, p_on_spent text, agent text)
returns public.task_budgets
language plpgsql security definer set search_path = ''
as $$
declare
  above uuid := case when t.budget_id = t.id then (select b.parent_budget from public.task_budgets b where b.task_id = t.id) else t.budget_id end;
  mine public.task_budgets;
  left_tokens bigint;
  left_usd numeric;
  held uuid[];
begin
  if p_tokens is null and p_usd is null then
    raise exception 'a budget needs tokens, money or both' using errcode = 'BT005',
      hint = 'Give --budget-tokens N, --budget-usd N, or both.';
  end if;
  if p_tokens <= 0 or p_usd <= 0 then
    raise exception 'a budget must be more than nothing (got % tokens, $%)', p_tokens, p_usd using errcode = 'BT005',
      hint = 'Give a positive number of tokens or dollars.';
  end if;
  if coalesce(p_on_spent, 'ask') not in ('ask', 'fail') then
    raise exception 'when a budget is spent the work left can ask or fail, not %', p_on_spent using errcode = 'BT005',
      hint = 'ask holds it and asks the sender to raise the budget; fail fails it (BT017).';
  end if;
  select * into mine from public.task_budgets where task_id = t.id for update;
  -- What is left above: the least over every budget from the one above up.
  with recursive up (id, n) as (
    select above, 0 where above is not null
    union all
    select b.parent_budget, up.n + 1 from up join public.task_budgets b on b.task_id = up.id where b.parent_budget is not null and up.n < 100
  )
  select pg_catalog.min(b.tokens_limit - b.tokens_spent), pg_catalog.min(b.usd_limit - b.usd_spent)
  into left_tokens, left_usd
  from up join public.task_budgets b on b.task_id = up.id;
  if p_tokens - coalesce(mine.tokens_spent, 0) > left_tokens then
    raise exception 'task % asks for % more tokens, but its chain has % left', t.id, p_tokens - coalesce(mine.tokens_spent, 0), greatest(left_tokens, 0)
      using errcode = 'BT017', hint = 'Ask for at most what is left (baton show <parent> says), or have the budget above raised first.';
  end if;
  if p_usd - coalesce(mine.usd_spent, 0) > left_usd then
    raise exception 'task % asks for % more, but its chain has % left', t.id,
      baton_private.usd_text(p_usd - coalesce(mine.usd_spent, 0)), baton_private.usd_text(greatest(left_usd, 0))
      using errcode = 'BT017', hint = 'Ask for at most what is left (baton show <parent> says), or have the budget above raised first.';
  end if;
  insert into public.task_budgets as b (task_id, parent_budget, set_by, tokens_limit, usd_limit, on_spent)
  values (t.id, above, agent, p_tokens, p_usd, coalesce(p_on_spent, 'ask'))
  on conflict (task_id) do update set
    tokens_limit = excluded.tokens_limit, usd_limit = excluded.usd_limit,
    on_spent = coalesce(p_on_spent, b.on_spent), set_by = excluded.set_by, updated_at = pg_catalog.now(),
    spent_at = case when (excluded.tokens_limit is not null and b.tokens_spent >= excluded.tokens_limit)
                      or (excluded.usd_limit is not null and b.usd_spent >= excluded.usd_limit) then coalesce(b.spent_at, pg_catalog.now()) end
  returning * into mine;
  if t.budget_id is distinct from t.id then
    -- The task and every task under it that named the budget above now name this one.
    with recursive below (id) as (
      select t.id
      union
      select x.id from below join public.task_handoffs x on x.parent_task_id = below.id
    )
    update public.task_handoffs x set budget_id = t.id
    from below where x.id = below.id and x.budget_id is not distinct from t.budget_id;
  end if;
  -- Raised: what waited under it goes on, unless a budget above is spent too.
  if mine.spent_at is null and baton_private.spent_budget(t.id) is null then
    with recursive under (id) as (
      select t.id
      union
      select b.task_id from under join public.task_budgets b on b.parent_budget = under.id
    )
    update public.task_handoffs x set not_before = case when x.run_at > pg_catalog.now() then x.run_at end, status_reason = null
    from under
    where x.budget_id = under.id and x.status = 'pending' and x.not_before = 'infinity' and x.waiting_on = 0;
  end if;
  return mine;
end
$$;
