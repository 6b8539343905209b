-- Budgets take what they are given and nothing else (issue 74).
--
-- A limit not named stays as it was: set_budget with tokens alone kept no money limit, and with money
-- alone no tokens, although `baton budget --tokens` is documented to set or raise one limit. A limit
-- kept as it was is not weighed again against what the chain has left (it was within it when set).
--
-- An amount of money is a finite number. Postgres numeric takes 'NaN' and 'Infinity', and NaN is
-- greater than every number there (NaN > 0 is true), so a budget of NaN could never be spent and a
-- run costing NaN made the chain's spend and both agents' days NaN for good. Every amount an RPC or an
-- operator's write brings passes one check, require_amount: a budget (handoff_task, handoff_tasks,
-- fan_out and set_budget, all through give_budget), a run's cost (record_usage) and a daily cap.

create function baton_private.require_amount(amount numeric, what text)
returns void
language plpgsql immutable set search_path = ''
as $$
begin
  if amount = 'NaN'::numeric or amount = 'Infinity'::numeric or amount = '-Infinity'::numeric then
    raise exception '% must be a finite number, not %', what, amount
      using errcode = 'BT005', hint = 'Give an amount in dollars as a plain number, such as 2.5.';
  end if;
end
$$;
revoke all on function baton_private.require_amount(numeric, text) from public, anon, authenticated;

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
  perform baton_private.require_amount(p_usd, 'a budget in money');
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
  -- Only a limit that changes asks the chain for more: one kept as it was was within it when it was set.
  if p_tokens is distinct from mine.tokens_limit and p_tokens - coalesce(mine.tokens_spent, 0) > left_tokens then
    raise exception 'task % asks for % more tokens, but its chain has % left', t.id, p_tokens - coalesce(mine.tokens_spent, 0), greatest(left_tokens, 0)
      using errcode = 'BT017', hint = 'Ask for at most what is left (baton show <parent> says), or have the budget above raised first.';
  end if;
  if p_usd is distinct from mine.usd_limit and p_usd - coalesce(mine.usd_spent, 0) > left_usd then
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


create or replace function baton_private.set_budget(p_task_id uuid, p_tokens bigint default null, p_usd numeric default null, p_on_spent text default null)
returns public.task_budgets
language plpgsql security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  t public.task_handoffs;
  b public.task_budgets;
  question uuid;
begin
  if me is null and coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  select * into t from public.task_handoffs where id = p_task_id for update;
  if not found or (me is not null and not baton_private.can_see_task(t, me)) then
    raise exception 'no task %', p_task_id using errcode = 'BT002', hint = 'Check the id: baton tasks --all lists the tasks.';
  end if;
  if me is not null and t.from_agent <> me then
    raise exception 'only the sender of task % (or an operator) can set its budget', t.id
      using errcode = 'BT003', hint = pg_catalog.format('Ask "%s" to.', t.from_agent);
  end if;
  select * into b from public.task_budgets where task_id = t.id;
  -- A limit not named stays as it was: raising the tokens keeps the money limit, and the other way round.
  b := baton_private.give_budget(t, coalesce(p_tokens, b.tokens_limit), coalesce(p_usd, b.usd_limit),
                                 coalesce(p_on_spent, b.on_spent), coalesce(me, 'operator'));
  if b.spent_at is null then
    select m.id into question from public.agent_messages m
    where m.task_id = t.id and m.kind = 'question' and m.body ? 'budget'
      and not exists (select from public.agent_messages a where a.reply_to_id = m.id)
    order by m.created_at desc limit 1;
    if question is not null then
      insert into public.agent_messages (from_agent, to_agent, task_id, reply_to_id, kind, body)
      select coalesce(me, t.from_agent), m.from_agent, t.id, m.id, 'answer',
             jsonb_build_object('text', pg_catalog.format('Budget raised: %s.', baton_private.budget_text(b)), 'budget', to_jsonb(b))
      from public.agent_messages m where m.id = question;
    end if;
  end if;
  return b;
end
$$;


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
  perform baton_private.require_amount(p_cost_usd, 'the cost of a run');
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


create or replace function baton_private.tg_agents__daily_caps()
returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  today date := (pg_catalog.now() at time zone 'UTC')::date;
  d public.agent_daily_spend;
begin
  perform baton_private.require_amount(new.daily_usd_cap, 'a daily cap in money');
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

