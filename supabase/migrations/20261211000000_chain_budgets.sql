-- Budgets along a chain: what a task and everything under it (follow-ups, fan-out parts and joins,
-- retries, answers that lead on) may spend in tokens, money or both, kept as the usage is reported and
-- enforced by the database on every path that claims or starts work.
--
-- A budget belongs to the task it was set on (task_budgets, one row) and covers that task's subtree:
-- each task names the nearest budget above it (task_handoffs.budget_id, inherited at insert from the
-- parent, or from the task a retry repeats). A budget under another may be smaller, never larger than
-- what is left above it. Every report of usage (record_usage) adds to each budget from the task's up;
-- one that reaches its limit is spent: the chain's pending work is held (on_spent 'ask': a question to
-- the budget's sender, which raising the budget answers) or failed (on_spent 'fail', BT017).
--
-- The one rule (tg_task_handoffs__budget, on every insert and status change of a task under a budget):
-- work under a spent budget is never claimed or started (BT017); it is held (not_before 'infinity', as a
-- task waiting on its dependencies is) or, when the budget says fail, failed. Tasks under no budget never
-- reach it (the triggers' WHEN), so a chain without a budget costs nothing.
--
-- Per-agent daily caps: an operator may cap what an agent spends a day (agents.daily_token_cap,
-- daily_usd_cap); a capped agent claims nothing more that day (its free capacity is none; claim_task
-- says BT018).

-- A budget's tokens: every token the model read or wrote (input, cached input and output).

insert into public.task_status_transitions (from_status, to_status, meaning) values
  ('pending', 'failed', 'its chain''s budget is spent and its sender chose to fail what is left');

create table public.task_budgets (
  task_id uuid not null primary key references public.task_handoffs (id) on delete cascade,
  parent_budget uuid references public.task_budgets (task_id) on delete set null,
  set_by text not null,
  tokens_limit bigint,
  usd_limit numeric(14, 6),
  on_spent text not null default 'ask',
  tokens_spent bigint not null default 0,
  usd_spent numeric(14, 6) not null default 0,
  spent_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint task_budgets_has_a_limit check (tokens_limit is not null or usd_limit is not null),
  constraint task_budgets_limits_positive check ((tokens_limit is null or tokens_limit > 0) and (usd_limit is null or usd_limit > 0)),
  constraint task_budgets_on_spent check (on_spent in ('ask', 'fail'))
);
alter table public.task_budgets enable row level security;
create index task_budgets_parent_idx on public.task_budgets (parent_budget) where parent_budget is not null;
revoke all on table public.task_budgets from anon, authenticated;
grant select on table public.task_budgets to authenticated;
grant all on table public.task_budgets to service_role;
create policy "Agents can view the budgets of tasks they can view" on public.task_budgets
  for select to authenticated
  using (exists (select from public.task_handoffs t where t.id = task_budgets.task_id));

comment on table public.task_budgets is 'What a task and everything under it may spend (tokens: input, cached and output; money in USD), and what it has spent, kept as usage is reported. A budget under another is never larger than what is left above it. Spent (spent_at set): the work left under it is held (on_spent ask: its sender is asked to raise it) or failed (on_spent fail).';
comment on column public.task_budgets.parent_budget is 'The budget above this one (the nearest one over the task), whose limits hold too.';
comment on column public.task_budgets.on_spent is 'ask: hold the work left and ask the budget''s sender to raise it; fail: fail the work left (BT017).';
comment on column public.task_budgets.spent_at is 'When a limit was reached; null while some is left (raising the limit clears it).';

alter table public.task_handoffs add column budget_id uuid;
create index task_handoffs_budget_idx on public.task_handoffs (budget_id) where budget_id is not null;
comment on column public.task_handoffs.budget_id is 'The nearest budget over this task (task_budgets): its own, its parent''s, or the retried task''s. Null: no budget.';

-- Per-agent daily caps, set by an operator; the day's spend is kept as usage is reported.
alter table public.agents add column daily_token_cap bigint, add column daily_usd_cap numeric(14, 6),
  add column spend_capped_until timestamptz;
alter table public.agents add constraint agents_daily_caps_positive
  check ((daily_token_cap is null or daily_token_cap > 0) and (daily_usd_cap is null or daily_usd_cap > 0));
comment on column public.agents.daily_token_cap is 'At most this many tokens a day (UTC) spent by the agent''s runs; null: no cap. Set by an operator.';
comment on column public.agents.daily_usd_cap is 'At most this much money (USD) a day (UTC) spent by the agent''s runs; null: no cap. Set by an operator.';
comment on column public.agents.spend_capped_until is 'Set when a daily cap is reached: the agent claims nothing until then (the next UTC midnight).';

create table public.agent_daily_spend (
  agent_id text not null references public.agents (id) on delete cascade,
  day date not null,
  tokens bigint not null default 0,
  usd numeric(14, 6) not null default 0,
  primary key (agent_id, day)
);
alter table public.agent_daily_spend enable row level security;
revoke all on table public.agent_daily_spend from anon, authenticated;
grant select on table public.agent_daily_spend to authenticated;
grant all on table public.agent_daily_spend to service_role;
create policy "Agents can view their own daily spend" on public.agent_daily_spend
  for select to authenticated using (agent_id = (select baton_private.current_agent_id()));
comment on table public.agent_daily_spend is 'What each agent''s runs spent per UTC day (tokens: input, cached and output; USD where reported), against its daily caps.';

-- What is left over a task: the first spent budget from its own up (null: none spent).
create function baton_private.spent_budget(p_budget uuid)
returns public.task_budgets
language sql stable security definer set search_path = ''
as $$
  with recursive up (id, n) as (
    select p_budget, 0
    union all
    select b.parent_budget, up.n + 1 from up join public.task_budgets b on b.task_id = up.id where b.parent_budget is not null and up.n < 100
  )
  select b.* from up join public.task_budgets b on b.task_id = up.id where b.spent_at is not null order by up.n limit 1
$$;

-- One line for a budget: "spent 1,200,000 of 1,000,000 tokens" (and money).
create function baton_private.budget_text(b public.task_budgets)
returns text
language sql immutable set search_path = ''
as $$
  select pg_catalog.concat_ws(' and ',
    case when b.tokens_limit is not null then pg_catalog.format('%s of %s tokens', b.tokens_spent, b.tokens_limit) end,
    case when b.usd_limit is not null then pg_catalog.format('$%s of $%s', pg_catalog.round(b.usd_spent, 4), pg_catalog.round(b.usd_limit, 4)) end)
$$;

create function baton_private.budget_refusal(b public.task_budgets)
returns text
language sql stable set search_path = ''
as $$ select pg_catalog.format('the budget on task %s is spent (%s)', b.task_id, baton_private.budget_text(b)) $$;

-- The refusal of a claim or start under a spent budget (none when it is not spent).
create function baton_private.refuse_for_budget(p_task_id uuid, spent public.task_budgets)
returns void
language plpgsql stable set search_path = ''
as $$
begin
  if spent.task_id is null then
    return;
  end if;
  raise exception 'task % cannot be claimed or started: %', p_task_id, baton_private.budget_refusal(spent)
    using errcode = 'BT017',
          hint = pg_catalog.format('The sender of task %s can raise it (baton budget %s --tokens N or --usd N) or cancel the work.', spent.task_id, spent.task_id);
end
$$;

-- The rule. Inserts: inherit the budget, and hold (or fail) work under a spent one. Status changes: no
-- claim or start under a spent budget; work handed back under one is held (or failed).
create function baton_private.tg_task_handoffs__budget()
returns trigger
language plpgsql security definer set search_path = ''
as $$
declare
  spent public.task_budgets;
begin
  if tg_op = 'INSERT' then
    select t.budget_id into new.budget_id from public.task_handoffs t
    where t.id = coalesce(new.parent_task_id, new.retry_of);
    if new.budget_id is null then
      return new;
    end if;
  elsif not (new.status = 'pending' or (old.status in ('pending', 'claimed') and new.status in ('claimed', 'in_progress'))) then
    return new;
  end if;
  spent := baton_private.spent_budget(new.budget_id);
  if spent.task_id is null then
    return new;
  end if;
  if new.status in ('claimed', 'in_progress') then
    perform baton_private.refuse_for_budget(new.id, spent);
  end if;
  if spent.on_spent = 'fail' then
    new.status := 'failed';
    new.status_reason := 'BT017: ' || baton_private.budget_refusal(spent);
    new.completed_at := pg_catalog.now();
    new.claim_token := null;
    new.lease_expires_at := null;
  else
    new.not_before := 'infinity';
    new.status_reason := 'held: ' || baton_private.budget_refusal(spent);
  end if;
  return new;
end
$$;

create trigger step6_budget before insert on public.task_handoffs
  for each row when (new.parent_task_id is not null or new.retry_of is not null)
  execute function baton_private.tg_task_handoffs__budget();
create trigger step6_budget_on_change before update on public.task_handoffs
  for each row when (new.budget_id is not null and (new.status is distinct from old.status or new.not_before is distinct from old.not_before))
  execute function baton_private.tg_task_handoffs__budget();

-- Sets a task's own budget, under the one it inherited: never more than is left above it.
create function baton_private.give_budget(t public.task_handoffs, p_tokens bigint, p_usd numeric, p_on_spent text, agent text)
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
    raise exception 'task % asks for $% more, but its chain has $% left', t.id, p_usd - coalesce(mine.usd_spent, 0), greatest(left_usd, 0)
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

-- Adds a run's spend to every budget from the task's up; one that reaches its limit is spent.
create function baton_private.spend_budget(t public.task_handoffs, p_tokens bigint, p_usd numeric, agent text)
returns void
language plpgsql security definer set search_path = ''
as $$
declare
  ids uuid[];
  b public.task_budgets;
  was timestamptz;
begin
  with recursive up (id, n) as (
    select t.budget_id, 0
    union all
    select x.parent_budget, up.n + 1 from up join public.task_budgets x on x.task_id = up.id where x.parent_budget is not null and up.n < 100
  )
  select array_agg(up.id order by up.n) into ids from up;
  -- Locked from the task's own up: reports in one chain lock in the same order.
  for i in 1 .. coalesce(cardinality(ids), 0) loop
    select x.spent_at into was from public.task_budgets x where x.task_id = ids[i] for update;
    update public.task_budgets x set
      tokens_spent = x.tokens_spent + p_tokens, usd_spent = x.usd_spent + p_usd, updated_at = pg_catalog.now(),
      spent_at = coalesce(x.spent_at, case when (x.tokens_limit is not null and x.tokens_spent + p_tokens >= x.tokens_limit)
                                            or (x.usd_limit is not null and x.usd_spent + p_usd >= x.usd_limit) then pg_catalog.now() end)
    where x.task_id = ids[i]
    returning * into b;
    if was is null and b.spent_at is not null then
      perform baton_private.budget_ran_out(b, agent);
    end if;
  end loop;
end
$$;

-- A budget just spent: the work left under it is held and its sender asked, or it is failed.
create function baton_private.budget_ran_out(b public.task_budgets, agent text)
returns void
language plpgsql security definer set search_path = ''
as $$
declare
  owner public.task_handoffs;
  why text := baton_private.budget_refusal(b);
  held integer;
begin
  select * into owner from public.task_handoffs where id = b.task_id;
  with recursive under (id) as (
    select b.task_id
    union
    select x.task_id from under join public.task_budgets x on x.parent_budget = under.id
  )
  update public.task_handoffs x
  set status = case when b.on_spent = 'fail' then 'failed'::public.task_status else x.status end,
      not_before = case when b.on_spent = 'fail' then x.not_before else 'infinity' end,
      status_reason = case when b.on_spent = 'fail' then 'BT017: ' else 'held: ' end || why
  from under
  where x.budget_id = under.id and x.status = 'pending';
  get diagnostics held = row_count;
  if b.on_spent = 'ask' then
    insert into public.agent_messages (from_agent, to_agent, task_id, kind, body)
    values (agent, owner.from_agent, owner.id, 'question', jsonb_build_object(
      'text', pg_catalog.format('The chain of task %s spent %s: raise its budget (baton budget %s --tokens N or --usd N) or cancel it. %s task(s) wait.',
                                owner.id, baton_private.budget_text(b), owner.id, held),
      'budget', jsonb_build_object('task_id', b.task_id, 'tokens_limit', b.tokens_limit, 'tokens_spent', b.tokens_spent,
                                   'usd_limit', b.usd_limit, 'usd_spent', b.usd_spent, 'waiting', held)));
  end if;
end
$$;

-- Sets or raises the budget of a task: by its sender, or the operator. A raise that leaves some over lets
-- the work held under it go on, and answers the question it asked.
create function baton_private.set_budget(p_task_id uuid, p_tokens bigint default null, p_usd numeric default null, p_on_spent text default null)
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
  b := baton_private.give_budget(t, coalesce(p_tokens, case when p_usd is null then b.tokens_limit end), coalesce(p_usd, case when p_tokens is null then b.usd_limit end),
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
revoke all on function baton_private.set_budget(uuid, bigint, numeric, text) from public, anon;
grant execute on function baton_private.set_budget(uuid, bigint, numeric, text) to authenticated, service_role;
comment on function baton_private.set_budget(uuid, bigint, numeric, text) is 'Sets or raises the budget of a task and everything under it (tokens, USD, or both; on_spent ask or fail): by its sender or the operator, never more than is left above it. Work held by a spent budget goes on once some is left.';

create function public.set_budget(p_task_id uuid, p_tokens bigint default null, p_usd numeric default null, p_on_spent text default null)
returns public.task_budgets
language plpgsql security invoker set search_path = ''
as $$begin return baton_private.set_budget($1, $2, $3, $4); end$$;
revoke all on function public.set_budget(uuid, bigint, numeric, text) from public, anon;
grant execute on function public.set_budget(uuid, bigint, numeric, text) to authenticated, service_role;
comment on function public.set_budget(uuid, bigint, numeric, text) is 'Sets or raises the budget of a task and everything under it (tokens, USD, or both; on_spent ask or fail): by its sender or the operator, never more than is left above it. Work held by a spent budget goes on once some is left.';

-- The budgets over a task, its own (or nearest) first, each with what is left; and the least left.
create function baton_private.task_budget(p_task_id uuid)
returns jsonb
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
  t public.task_handoffs;
  rows jsonb;
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
  if t.budget_id is null then
    return null;
  end if;
  with recursive up (id, n) as (
    select t.budget_id, 0
    union all
    select b.parent_budget, up.n + 1 from up join public.task_budgets b on b.task_id = up.id where b.parent_budget is not null and up.n < 100
  )
  select jsonb_agg(to_jsonb(b) || jsonb_build_object(
           'tokens_left', case when b.tokens_limit is not null then greatest(b.tokens_limit - b.tokens_spent, 0) end,
           'usd_left', case when b.usd_limit is not null then greatest(b.usd_limit - b.usd_spent, 0) end) order by up.n)
  into rows
  from up join public.task_budgets b on b.task_id = up.id;
  return jsonb_build_object(
    'budgets', rows,
    'tokens_left', (select pg_catalog.min((r ->> 'tokens_left')::bigint) from jsonb_array_elements(rows) r),
    'usd_left', (select pg_catalog.min((r ->> 'usd_left')::numeric) from jsonb_array_elements(rows) r),
    'spent', exists (select from jsonb_array_elements(rows) r where r ->> 'spent_at' is not null));
end
$$;
revoke all on function baton_private.task_budget(uuid) from public, anon;
grant execute on function baton_private.task_budget(uuid) to authenticated, service_role;
comment on function baton_private.task_budget(uuid) is 'The budgets over a task (the nearest first, then each above it), with what each has spent and has left, and the least left of them all (tokens_left, usd_left); null when no budget covers it. For whoever may see the task.';

create function public.task_budget(p_task_id uuid)
returns jsonb
language plpgsql stable security invoker set search_path = ''
as $$begin return baton_private.task_budget($1); end$$;
revoke all on function public.task_budget(uuid) from public, anon;
grant execute on function public.task_budget(uuid) to authenticated, service_role;
comment on function public.task_budget(uuid) is 'The budgets over a task (the nearest first, then each above it), with what each has spent and has left, and the least left of them all (tokens_left, usd_left); null when no budget covers it. For whoever may see the task.';

-- What was spent, by day, agent and model: over the runs of tasks the caller may see (the operator: all),
-- of one agent, of one chain (a task and everything under it), or all, since a time.
create function baton_private.spend_report(p_agent_id text default null, p_task_id uuid default null, p_since timestamptz default null)
returns table (day date, agent_id text, model text, runs integer, input_tokens bigint, output_tokens bigint,
               cached_tokens bigint, cost_usd numeric)
language plpgsql stable security definer set search_path = ''
as $$
declare
  me text := baton_private.current_agent_id();
begin
  if me is null and coalesce(auth.jwt() ->> 'role', '') <> 'service_role' then
    perform baton_private.require_agent();
  end if;
  return query
    with recursive below (id) as (
      select p_task_id where p_task_id is not null
      union
      select x.id from below b join public.task_handoffs x on x.parent_task_id = b.id
    )
    select (r.updated_at at time zone 'UTC')::date, r.agent_id, r.model, pg_catalog.count(*)::integer,
           pg_catalog.sum(r.input_tokens)::bigint, pg_catalog.sum(r.output_tokens)::bigint, pg_catalog.sum(r.cached_tokens)::bigint,
           pg_catalog.sum(r.cost_usd)
    from public.task_runs r
    where (p_agent_id is null or r.agent_id = p_agent_id)
      and (p_task_id is null or r.task_id in (select id from below))
      and r.updated_at >= coalesce(p_since, pg_catalog.now() - interval '7 days')
      and (me is null or exists (select from public.task_handoffs t where t.id = r.task_id and baton_private.can_see_task(t, me)))
    group by 1, 2, 3
    order by 1, 2, 3;
end
$$;
revoke all on function baton_private.spend_report(text, uuid, timestamptz) from public, anon;
grant execute on function baton_private.spend_report(text, uuid, timestamptz) to authenticated, service_role;
comment on function baton_private.spend_report(text, uuid, timestamptz) is 'What was spent since p_since (default: the last 7 days), by UTC day, agent and model: of one agent, of one chain (a task and everything under it), or everything the caller may see.';

create function public.spend_report(p_agent_id text default null, p_task_id uuid default null, p_since timestamptz default null)
returns table (day date, agent_id text, model text, runs integer, input_tokens bigint, output_tokens bigint,
               cached_tokens bigint, cost_usd numeric)
language plpgsql stable security invoker set search_path = ''
as $$begin return query select * from baton_private.spend_report($1, $2, $3); end$$;
revoke all on function public.spend_report(text, uuid, timestamptz) from public, anon;
grant execute on function public.spend_report(text, uuid, timestamptz) to authenticated, service_role;
comment on function public.spend_report(text, uuid, timestamptz) is 'What was spent since p_since (default: the last 7 days), by UTC day, agent and model: of one agent, of one chain (a task and everything under it), or everything the caller may see.';

-- A run's spend counts against the agent's day; reaching a cap stops its claims until the next day.
create function baton_private.spend_daily(agent text, p_tokens bigint, p_usd numeric)
returns void
language plpgsql security definer set search_path = ''
as $$
declare
  a public.agents;
  d public.agent_daily_spend;
  today date := (pg_catalog.now() at time zone 'UTC')::date;
begin
  insert into public.agent_daily_spend as x (agent_id, day, tokens, usd) values (agent, today, p_tokens, p_usd)
  on conflict (agent_id, day) do update set tokens = x.tokens + excluded.tokens, usd = x.usd + excluded.usd
  returning * into d;
  select * into a from public.agents where id = agent;
  if (a.daily_token_cap is not null and d.tokens >= a.daily_token_cap) or (a.daily_usd_cap is not null and d.usd >= a.daily_usd_cap) then
    update public.agents set spend_capped_until = ((today + 1)::timestamp at time zone 'UTC') where id = agent;
  end if;
end
$$;

-- record_usage, as before, adding the spend to the budgets and the day.
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
  -- What the run spent counts against the budgets over the task and the agent's day.
  if t.budget_id is not null then
    perform baton_private.spend_budget(t, coalesce(p_input_tokens, 0) + coalesce(p_output_tokens, 0) + coalesce(p_cached_tokens, 0), coalesce(p_cost_usd, 0), me);
  end if;
  perform baton_private.spend_daily(me, coalesce(p_input_tokens, 0) + coalesce(p_output_tokens, 0) + coalesce(p_cached_tokens, 0), coalesce(p_cost_usd, 0));
  return r;
end
$$;

create or replace function baton_private.free_capacity(agent text)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  cap integer;
  capped timestamptz;
  working integer;
begin
  select a.max_concurrent, a.spend_capped_until into cap, capped from public.agents a where a.id = agent for no key update;
  -- An agent that reached a daily cap of spend takes no more work that day.
  if capped > now() then
    return 0;
  end if;
  -- At most `cap` of the agent's tasks, read through its held index (a pending task has no holder,
  -- task_handoffs_holder_matches_status, so the held ones are these two statuses and input_required).
  select count(*) into working from (
    select from public.task_handoffs t
    where t.claimed_by = agent and t.status in ('claimed', 'in_progress')
    order by t.priority desc, t.created_at
    limit cap) h;
  return greatest(cap - working, 0);
end
$function$;

create or replace function baton_private.claim_task(p_task_id uuid, p_lease_seconds integer DEFAULT NULL::integer, p_start boolean DEFAULT false)
 RETURNS public.task_handoffs
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  me text := baton_private.require_agent();
  lease interval := baton_private.lease_for(p_lease_seconds);
  free integer := baton_private.free_capacity(me);
  t public.task_handoffs := baton_private.lock_task(p_task_id, me);
begin
  if t.to_agent is not null and t.to_agent <> me then
    raise exception 'task % is addressed to "%"; only that agent can claim it', t.id, t.to_agent
      using errcode = 'BT003', hint = 'Ask its sender to reassign it, or claim a task addressed to you.';
  end if;
  if t.to_agent is null and not t.required_capabilities <@ baton_private.agent_capabilities(me) then
    raise exception 'task % needs capabilities % that agent "%" lacks', t.id,
      array_to_string(t.required_capabilities, ', '), me
      using errcode = 'BT003', hint = 'Only agents holding every required capability can claim a broadcast.';
  end if;
  if t.status in ('claimed', 'in_progress', 'input_required') then
    raise exception 'task % is already claimed by "%"', t.id, t.claimed_by
      using errcode = 'BT004', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.status <> 'pending' then
    raise exception 'task % is %; only pending tasks can be claimed', t.id, t.status
      using errcode = 'BT001', hint = 'Pick another task: baton tasks --pending.';
  end if;
  if t.waiting_on > 0 then
    raise exception 'task % waits for % of the tasks it depends on', t.id, t.waiting_on
      using errcode = 'BT015', hint = format('It becomes claimable when they complete: %s.', array_to_string(t.depends_on, ', '));
  end if;
  -- Held by a spent budget: say so, not that it backs off.
  if t.budget_id is not null and t.not_before = 'infinity' and t.waiting_on = 0 then
    perform baton_private.refuse_for_budget(t.id, baton_private.spent_budget(t.budget_id));
  end if;
  if t.not_before > now() then
    if t.attempts = 0 and t.run_at is not null then
      raise exception 'task % is scheduled for %', t.id, t.not_before
        using errcode = 'BT014',
              hint = format('Claim it in %s s.', greatest(ceil(extract(epoch from t.not_before - now())), 1));
    end if;
    raise exception 'task % is backing off after a failure until %', t.id, t.not_before
      using errcode = 'BT014',
            hint = format('Claim it again in %s s.', greatest(ceil(extract(epoch from t.not_before - now())), 1));
  end if;
  if free < 1 and exists (select from public.agents a where a.id = me and a.spend_capped_until > now()) then
    raise exception 'agent "%" reached its daily cap of spend', me
      using errcode = 'BT018', hint = 'It takes work again at the next UTC midnight; an operator can raise agents.daily_token_cap or daily_usd_cap.';
  end if;
  if free < 1 then
    raise exception 'agent "%" already holds as many tasks as its max_concurrent allows', me
      using errcode = 'BT008', hint = 'Finish or release a task first, or raise max_concurrent.';
  end if;

  perform baton_private.mark_claimed(array[t.id], me, lease, p_start);
  select * into t from public.task_handoffs where id = t.id;
  return t;
end
$function$;

-- The hand-off takes a budget (p_budget_tokens, p_budget_usd, p_on_budget_spent): its signature grows,
-- so it is made anew. handoff_item (batches, fan-outs) passes the same fields; a batch's items with a
-- budget go one by one.
drop function public.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone);
drop function baton_private.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone);
create function baton_private.handoff_task(p_title text, p_to_agent text DEFAULT NULL::text, p_description text DEFAULT NULL::text, p_priority public.task_priority DEFAULT 'medium'::public.task_priority, p_payload jsonb DEFAULT '{}'::jsonb, p_required_capabilities text[] DEFAULT '{}'::text[], p_deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 3, p_parent_task_id uuid DEFAULT NULL::uuid, p_idempotency_key text DEFAULT NULL::text, p_allow_offline boolean DEFAULT true, p_lease_seconds integer DEFAULT NULL::integer, p_expected_outputs jsonb DEFAULT '[]'::jsonb, p_input_artifacts jsonb DEFAULT '[]'::jsonb, p_depends_on uuid[] DEFAULT '{}'::uuid[], p_dependency_mode text DEFAULT 'all'::text, p_on_dependency_failure text DEFAULT 'cancel'::text, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_budget_tokens bigint DEFAULT NULL::bigint, p_budget_usd numeric DEFAULT NULL::numeric, p_on_budget_spent text DEFAULT NULL::text)
 RETURNS public.task_handoffs
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  me text := baton_private.require_agent();
  t public.task_handoffs;
  parent public.task_handoffs;
  target public.agents;
begin
  if p_to_agent is not null then
    select * into target from public.agents a where a.id = p_to_agent;
    if not found then
      raise exception 'no agent named "%"', p_to_agent
        using errcode = 'BT002', hint = 'See who is registered: baton discover --all.';
    end if;
    if not coalesce(p_allow_offline, true) and not baton_private.is_online(target) then
      raise exception 'agent "%" is offline (last heartbeat: %)', p_to_agent, coalesce(target.last_heartbeat::text, 'never')
        using errcode = 'BT011',
              hint = 'Queue it anyway with allow-offline (baton handoff --allow-offline), or pick an online agent: baton discover.';
    end if;
  end if;
  if p_parent_task_id is not null then
    parent := baton_private.visible_task(p_parent_task_id, me);
    if parent.claimed_by is distinct from me and parent.from_agent <> me then
      raise exception 'only the holder or the sender of task % can hand off work within it', p_parent_task_id
        using errcode = 'BT003', hint = 'Hand it off without a parent, or claim the parent first.';
    end if;
  end if;
  if coalesce(p_dependency_mode, 'all') not in ('all', 'any') or coalesce(p_on_dependency_failure, 'cancel') not in ('cancel', 'run') then
    raise exception 'dependency mode must be all or any, and on failure cancel or run (got % and %)', p_dependency_mode, p_on_dependency_failure
      using errcode = 'BT005', hint = 'all waits for every dependency, any for the first; cancel or run decides what a failed one does.';
  end if;
  perform baton_private.check_inputs(coalesce(p_input_artifacts, '[]'), me);
  if p_idempotency_key is not null then
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
    if found then
      return t;
    end if;
  end if;

  insert into public.task_handoffs (
    from_agent, to_agent, title, description, priority, payload, required_capabilities,
    deadline, max_attempts, parent_task_id, idempotency_key, lease_seconds, expected_outputs, input_artifacts,
    depends_on, dependency_mode, on_dependency_failure, run_at
  ) values (
    me, p_to_agent, p_title, p_description, coalesce(p_priority, 'medium'), coalesce(p_payload, '{}'),
    coalesce(p_required_capabilities, '{}'), p_deadline, coalesce(p_max_attempts, 3), p_parent_task_id,
    p_idempotency_key, p_lease_seconds, coalesce(p_expected_outputs, '[]'), coalesce(p_input_artifacts, '[]'),
    coalesce(p_depends_on, '{}'), coalesce(p_dependency_mode, 'all'), coalesce(p_on_dependency_failure, 'cancel'), p_run_at
  )
  on conflict (from_agent, idempotency_key) where idempotency_key is not null do nothing
  returning * into t;

  if t.id is null then
    -- A concurrent hand-off with the same key won; return its task.
    select * into t from public.task_handoffs where from_agent = me and idempotency_key = p_idempotency_key;
  elsif p_budget_tokens is not null or p_budget_usd is not null or p_on_budget_spent is not null then
    perform baton_private.give_budget(t, p_budget_tokens, p_budget_usd, p_on_budget_spent, me);
    select * into t from public.task_handoffs where id = t.id;
  end if;
  return t;
end
$function$;

revoke all on function baton_private.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) from public, anon;
grant execute on function baton_private.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) to authenticated, service_role;
comment on function baton_private.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) is 'Hands off a task as the calling agent: to p_to_agent, or to every agent holding p_required_capabilities when p_to_agent is null. With p_depends_on it waits until those tasks complete (p_dependency_mode all or any; p_on_dependency_failure cancel or run); with p_run_at it is not claimable before then. With p_allow_offline = false an offline addressee is refused (BT011). With p_budget_tokens and/or p_budget_usd it carries a budget for itself and everything under it (never more than is left above it); p_on_budget_spent (ask or fail) says what the work left does once it is spent.';

create function public.handoff_task(p_title text, p_to_agent text DEFAULT NULL::text, p_description text DEFAULT NULL::text, p_priority public.task_priority DEFAULT 'medium'::public.task_priority, p_payload jsonb DEFAULT '{}'::jsonb, p_required_capabilities text[] DEFAULT '{}'::text[], p_deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 3, p_parent_task_id uuid DEFAULT NULL::uuid, p_idempotency_key text DEFAULT NULL::text, p_allow_offline boolean DEFAULT true, p_lease_seconds integer DEFAULT NULL::integer, p_expected_outputs jsonb DEFAULT '[]'::jsonb, p_input_artifacts jsonb DEFAULT '[]'::jsonb, p_depends_on uuid[] DEFAULT '{}'::uuid[], p_dependency_mode text DEFAULT 'all'::text, p_on_dependency_failure text DEFAULT 'cancel'::text, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_budget_tokens bigint DEFAULT NULL::bigint, p_budget_usd numeric DEFAULT NULL::numeric, p_on_budget_spent text DEFAULT NULL::text)
 RETURNS public.task_handoffs
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$begin return baton_private.handoff_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21); end$function$;

revoke all on function public.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) from public, anon;
grant execute on function public.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) to authenticated, service_role;
comment on function public.handoff_task(text, text, text, public.task_priority, jsonb, text[], timestamp with time zone, integer, uuid, text, boolean, integer, jsonb, jsonb, uuid[], text, text, timestamp with time zone, bigint, numeric, text) is 'Hands off a task as the calling agent: to p_to_agent, or to every agent holding p_required_capabilities when p_to_agent is null. With p_depends_on it waits until those tasks complete (p_dependency_mode all or any; p_on_dependency_failure cancel or run); with p_run_at it is not claimable before then. With p_allow_offline = false an offline addressee is refused (BT011). With p_budget_tokens and/or p_budget_usd it carries a budget for itself and everything under it (never more than is left above it); p_on_budget_spent (ask or fail) says what the work left does once it is spent.';

create or replace function baton_private.handoff_item(item jsonb)
 RETURNS public.task_handoffs
 LANGUAGE sql
 SET search_path TO ''
AS $function$
  select public.handoff_task(
    p_title => item ->> 'title',
    p_to_agent => item ->> 'to_agent',
    p_description => item ->> 'description',
    p_priority => coalesce(item ->> 'priority', 'medium')::public.task_priority,
    p_payload => coalesce(item -> 'payload', '{}'),
    p_required_capabilities => coalesce(array(select jsonb_array_elements_text(item -> 'required_capabilities')), '{}'),
    p_deadline => (item ->> 'deadline')::timestamptz,
    p_max_attempts => coalesce((item ->> 'max_attempts')::integer, 3),
    p_parent_task_id => (item ->> 'parent_task_id')::uuid,
    p_idempotency_key => item ->> 'idempotency_key',
    p_allow_offline => coalesce((item ->> 'allow_offline')::boolean, true),
    p_lease_seconds => (item ->> 'lease_seconds')::integer,
    p_expected_outputs => coalesce(item -> 'expected_outputs', '[]'),
    p_input_artifacts => coalesce(item -> 'input_artifacts', '[]'),
    p_depends_on => coalesce(array(select jsonb_array_elements_text(item -> 'depends_on'))::uuid[], '{}'),
    p_dependency_mode => coalesce(item ->> 'dependency_mode', 'all'),
    p_on_dependency_failure => coalesce(item ->> 'on_dependency_failure', 'cancel'),
    p_run_at => (item ->> 'run_at')::timestamptz,
    p_budget_tokens => (item ->> 'budget_tokens')::bigint,
    p_budget_usd => (item ->> 'budget_usd')::numeric,
    p_on_budget_spent => item ->> 'on_budget_spent')
$function$;

create or replace function baton_private.handoff_tasks(p_tasks jsonb)
 RETURNS TABLE(index integer, task_id uuid, code text, message text, hint text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  me text := baton_private.require_agent();
  settings public.baton_settings := baton_private.settings();
  used record;
  item jsonb;
  i integer;
  made public.task_handoffs;
  count_made integer := 0;
  allowance integer;
  err_hint text;
  quick jsonb := '{}';
  -- The answers for the rest, one object each (appending to an array variable costs no copy).
  answers jsonb[] := '{}';
begin
  if jsonb_typeof(p_tasks) <> 'array' or jsonb_array_length(p_tasks) > 1000 then
    raise exception 'tasks must be an array of at most 1000 items' using errcode = 'BT005',
      hint = 'Send [{"title": "…", "to_agent": "coder", "payload": {}}, …].';
  end if;
  -- What the sender used, read without a lock: its concurrent requests do not wait for each other.
  select * into used from baton_private.add_usage(me, 0, 0, 0);
  if used.open_tasks + jsonb_array_length(p_tasks) > settings.open_tasks_per_sender then
    used.open_tasks := baton_private.recount_open_tasks(me, 0);
  end if;
  allowance := least(settings.handoffs_per_minute - used.handoffs, settings.open_tasks_per_sender - used.open_tasks);
  perform set_config('baton.batch', 'on', true);
  -- Plain tasks, when the quota has room for all: one INSERT for them all.
  if jsonb_array_length(p_tasks) <= allowance then
    begin
      with asked as materialized (
        select gen_random_uuid() as id, (a.n - 1)::integer as n, a.item
        from jsonb_array_elements(p_tasks) with ordinality as a (item, n)
        where jsonb_typeof(a.item) = 'object'
          and coalesce(a.item ->> 'parent_task_id', a.item ->> 'idempotency_key', a.item ->> 'run_at',
                       a.item ->> 'budget_tokens', a.item ->> 'budget_usd', a.item ->> 'on_budget_spent') is null
          and coalesce(a.item -> 'input_artifacts', '[]') = '[]'
          and coalesce(a.item -> 'depends_on', '[]') = '[]'
          and coalesce(a.item ->> 'allow_offline', 'true') = 'true'
          and (a.item ->> 'to_agent' is null or exists (select from public.agents g where g.id = a.item ->> 'to_agent'))
      ), inserted as (
        insert into public.task_handoffs (
          id, from_agent, to_agent, title, description, priority, payload, required_capabilities,
          deadline, max_attempts, lease_seconds, expected_outputs)
        select q.id, me, q.item ->> 'to_agent', q.item ->> 'title', q.item ->> 'description',
               coalesce(q.item ->> 'priority', 'medium')::public.task_priority, coalesce(q.item -> 'payload', '{}'),
               coalesce(array(select jsonb_array_elements_text(q.item -> 'required_capabilities')), '{}'),
               (q.item ->> 'deadline')::timestamptz, coalesce((q.item ->> 'max_attempts')::integer, 3),
               (q.item ->> 'lease_seconds')::integer, coalesce(q.item -> 'expected_outputs', '[]')
        from asked q
        order by q.n
        returning id
      )
      -- One INSERT stores every row or raises: each asked row is stored under the id it was given.
      -- (Not a join with what it returns: over two CTEs the planner picks a nested loop, 1,000 × 1,000.)
      select coalesce(jsonb_object_agg(q.n::text, q.id), '{}') into quick
      from asked q
      where (select count(*) from inserted) = (select count(*) from asked);
    exception when others then
      quick := '{}';
    end;
  end if;
  -- The rest one by one, each refused on its own. (When the plain ones went in together, the quota
  -- had room for every item, so their order against the rest does not matter.)
  count_made := (select count(*) from jsonb_object_keys(quick));
  for item, i in
    select a.item, (a.n - 1)::integer from jsonb_array_elements(p_tasks) with ordinality as a (item, n)
    where not quick ? (a.n - 1)::text
    order by a.n
  loop
    if count_made >= allowance then
      answers := answers || jsonb_build_object('index', i, 'code', 'BT013',
        'message', format('agent "%s" reached its quota of hand-offs per minute or of open tasks', me),
        'hint', format('Try again in %s s; an operator can raise baton_settings.handoffs_per_minute or open_tasks_per_sender.',
                       greatest(ceil(extract(epoch from date_trunc('minute', now()) + interval '1 minute' - now())), 1)));
    else
      begin
        made := baton_private.handoff_item(item);
        if made.created_at = now() then
          count_made := count_made + 1;
        end if;
        answers := answers || jsonb_build_object('index', i, 'task_id', made.id);
      exception when others then
        get stacked diagnostics err_hint = pg_exception_hint;
        answers := answers || jsonb_build_object('index', i, 'code', sqlstate, 'message', sqlerrm, 'hint', nullif(err_hint, ''));
      end;
    end if;
  end loop;
  perform set_config('baton.batch', '', true);
  perform baton_private.add_usage(me, count_made, 0, 0);
  return query
    select q.key::integer, (q.value #>> '{}')::uuid, null::text, null::text, null::text from jsonb_each(quick) q
    union all
    select a.index, a.task_id, a.code, a.message, a.hint
    from unnest(answers) as x, jsonb_to_record(x) as a (index integer, task_id uuid, code text, message text, hint text)
    order by 1;
end
$function$;

-- The internal helpers: no API role calls them.
revoke all on function baton_private.spent_budget(uuid) from public, anon, authenticated;
revoke all on function baton_private.budget_text(public.task_budgets) from public, anon, authenticated;
revoke all on function baton_private.budget_refusal(public.task_budgets) from public, anon, authenticated;
revoke all on function baton_private.refuse_for_budget(uuid, public.task_budgets) from public, anon, authenticated;
revoke all on function baton_private.tg_task_handoffs__budget() from public, anon, authenticated;
revoke all on function baton_private.give_budget(public.task_handoffs, bigint, numeric, text, text) from public, anon, authenticated;
revoke all on function baton_private.spend_budget(public.task_handoffs, bigint, numeric, text) from public, anon, authenticated;
revoke all on function baton_private.budget_ran_out(public.task_budgets, text) from public, anon, authenticated;
revoke all on function baton_private.spend_daily(text, bigint, numeric) from public, anon, authenticated;

-- The relations the API serves, now with the budgets and the days' spend.
create or replace function baton_private.baton_relations()
returns text[]
language plpgsql immutable set search_path = ''
as $$
begin
  return array[
    -- tables
    'agents', 'agent_tokens', 'agent_messages', 'agent_usage', 'baton_settings', 'recurring_handoffs',
    'task_handoffs', 'task_events', 'task_artifacts', 'task_declines', 'task_status_transitions', 'task_runs',
    'task_budgets', 'agent_daily_spend',
    -- views
    'agent_presence', 'task_lineage', 'dead_letters', 'waiting_tasks', 'stuck_claims', 'task_queue', 'task_counts',
    'task_throughput'];
end
$$;
