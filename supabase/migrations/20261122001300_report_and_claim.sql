-- A daemon that finishes work and has room for more reports and claims in one request: the outcomes
-- first (so the slots they free count), then claim_next_tasks for up to p_claim tasks. Each part keeps
-- its own rules: an outcome refused is answered on its own, and the claim sees the holder's capacity
-- after the outcomes. Half the round trips of reporting and claiming apart.
create function public.report_and_claim(
  p_outcomes jsonb,
  p_claim integer default 0,
  p_capabilities text[] default null,
  p_lease_seconds integer default null
) returns jsonb
language plpgsql security definer set search_path = ''
as $$
declare
  outcomes jsonb;
  claimed jsonb := '[]';
  refused jsonb;
  err_hint text;
begin
  select coalesce(jsonb_agg(to_jsonb(o)), '[]') into outcomes from public.report_outcomes(p_outcomes) o;
  if coalesce(p_claim, 0) > 0 then
    -- A claim refused (capacity, a quota) never takes the outcomes with it.
    begin
      select coalesce(jsonb_agg(to_jsonb(t)), '[]') into claimed
      from public.claim_next_tasks(p_limit => p_claim, p_capabilities => p_capabilities, p_lease_seconds => p_lease_seconds, p_start => true) t;
    exception when others then
      get stacked diagnostics err_hint = pg_exception_hint;
      refused := jsonb_build_object('code', sqlstate, 'message', sqlerrm, 'hint', nullif(err_hint, ''));
    end;
  end if;
  return jsonb_build_object('outcomes', outcomes, 'claimed', claimed, 'claim_error', refused);
end
$$;
comment on function public.report_and_claim is 'report_outcomes(p_outcomes), then claim_next_tasks for up to p_claim tasks (started), in one request: {outcomes: [as report_outcomes], claimed: [tasks], claim_error: {code, message, hint} or null}. What a daemon with free slots calls when it reports.';
revoke all on function public.report_and_claim from public, anon;
grant execute on function public.report_and_claim to authenticated;
