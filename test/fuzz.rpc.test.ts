/**
 * Property-based fuzzing of every RPC: random agents call random functions with generated arguments
 * (good, stale, foreign and malformed), partly at once, over HTTP through supabase-js. Whatever they
 * do, no call gets a 5xx or a dropped connection, and afterwards the record holds its invariants.
 */
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untyped, type TestAgent } from './helpers.js';
import { ownStack } from './own-stack.js';

// A stack of its own: these agents claim whatever they may, and hand off broadcasts anyone may claim.
const own = ownStack('fuzz');
let db: pg.Pool;
beforeAll(() => { db = new pg.Pool({ connectionString: own.env.DATABASE_URL, max: 4 }); });
afterAll(() => db?.end());

const capabilities = ['code', 'review', 'web'];
const kinds = ['note', 'progress', 'question', 'answer', 'result'];
/** Mostly what a real agent sends, sometimes anything at all. */
function mostly<T>(usual: fc.Arbitrary<T>, wild: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: usual, weight: 4 }, { arbitrary: wild, weight: 1 });
}

const words = fc.stringMatching(/^[A-Za-z][A-Za-z ]{2,30}$/);
const text = mostly(words, fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u001b[2J', 'x'.repeat(5000), '\u0000'),
));
const json = mostly(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }), fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.constantFrom({ status: 'success', summary: 'ok' }, { status: 'partial' }, { status: 'nope' }, {}, [], null),
  fc.integer({ min: 30, max: 60 }).map((n) => JSON.parse(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`)),
));
const result = mostly(fc.record({ status: fc.constantFrom('success', 'partial', 'failed'), summary: words }), json);

interface World {
  agents: TestAgent[];
  tasks: string[];
  /** How often each function answered with each code, to see that the fuzz reaches past the refusals. */
  outcomes: Map<string, number>;
}

type Pick<T> = (world: World) => T;

/** A task id: one of the world's, or one nobody has. */
const taskRef = mostly(fc.nat().map((i): Pick<string> => (w) => w.tasks[w.tasks.length - 1 - (i % Math.max(w.tasks.length, 1))] ?? crypto.randomUUID()),
  fc.constant<Pick<string>>(() => crypto.randomUUID()));

/** A task in `status` among the world's, at random; else any task reference. */
function inStatus(status: string): fc.Arbitrary<Pick<Promise<string>>> {
  return fc.tuple(taskRef, fc.double({ min: 0, max: 1, noNaN: true })).map(([fallback, r]) => async (w) => {
    const { rows } = await db.query(
      `select id from task_handoffs where status = $1 and id = any($2) order by id offset floor($3::float8 * (select count(*) from task_handoffs where status = $1 and id = any($2))) limit 1`,
      [status, w.tasks, r]);
    return rows[0]?.id ?? fallback(w);
  });
}

/** Who usually makes a call about a task: its holder, sender or addressee (sometimes anyone). */
const party = mostly(fc.constantFrom('claimed_by', 'from_agent', 'to_agent'), fc.constant(undefined));
async function partyOf(id: string, column: string | undefined): Promise<string | undefined> {
  if (!column) return undefined;
  const { rows } = await db.query(`select ${column} as agent from task_handoffs where id = $1`, [id]);
  return rows[0]?.agent ?? undefined;
}
const agentRef = fc.nat().map((i): Pick<string> => (w) => w.agents[i % w.agents.length]!.id);

/** The task's current claim token (as its holder would present it), a stale one, or garbage. */
async function tokenFor(id: string, choice: number): Promise<string | null> {
  if (choice === 0) return crypto.randomUUID();
  if (choice === 1) return null;
  // 2 to 9: the current token.
  const { rows } = await db.query('select claim_token from task_handoffs where id = $1', [id]);
  return rows[0]?.claim_token ?? null;
}

/** A function, its arguments, and (sometimes) the agent that should make the call. */
type Call = (world: World) => Promise<[string, Record<string, unknown>, string?]>;

const calls: fc.Arbitrary<Call>[] = [
  fc.record({ to: fc.option(agentRef), title: text, priority: mostly(fc.constantFrom('low', 'medium', 'high', 'urgent'), fc.constant('extreme')),
    payload: json, caps: fc.subarray(capabilities), parent: mostly(fc.constant(null), taskRef), attempts: mostly(fc.integer({ min: 1, max: 4 }), fc.integer({ min: -1, max: 200 })) })
    .map((a): Call => async (w) => {
      const parent = a.parent?.(w) ?? null;
      return ['handoff_task', { p_title: a.title, p_to_agent: a.to?.(w) ?? null, p_priority: a.priority, p_payload: a.payload,
        p_required_capabilities: a.caps, p_parent_task_id: parent, p_max_attempts: a.attempts }, parent ? await partyOf(parent, 'claimed_by') : undefined];
    }),
  fc.record({ task: taskRef, start: mostly(fc.constant(true), fc.constant(false)), lease: fc.option(fc.integer({ min: 0, max: 100 })) })
    .map((a): Call => async (w) => ['claim_task', { p_task_id: a.task(w), p_start: a.start, p_lease_seconds: a.lease }]),
  fc.record({ limit: mostly(fc.integer({ min: 1, max: 5 }), fc.integer({ min: -1, max: 2000 })), start: mostly(fc.constant(true), fc.constant(false)), caps: fc.option(fc.subarray(capabilities)) })
    .map((a): Call => async () => ['claim_next_tasks', { p_limit: a.limit, p_start: a.start, p_capabilities: a.caps }]),
  ...(['start_task', 'complete_task', 'fail_task', 'release_task', 'decline_task'] as const).map((fn) =>
    fc.record({ task: mostly(inStatus(fn === 'start_task' ? 'claimed' : 'in_progress'), taskRef.map((f) => async (w: World) => f(w))), token: fc.nat(9), result, reason: text,
      retry: fc.boolean(), problems: fc.option(json), holder: mostly(fc.constant(true), fc.constant(false)) })
      .map((a): Call => async (w) => {
        const id = await a.task(w);
        const args: Record<string, unknown> = { p_task_id: id, p_claim_token: await tokenFor(id, a.token) };
        if (fn === 'complete_task') args.p_result = a.result;
        if (fn === 'fail_task') Object.assign(args, { p_error: a.reason, p_retry: a.retry, p_problems: a.problems });
        if (fn === 'release_task' || fn === 'decline_task') args.p_reason = a.reason;
        return [fn, args, await partyOf(id, a.holder ? 'claimed_by' : undefined)];
      })),
  ...(['reject_task', 'cancel_task', 'report_progress', 'ask_question', 'answer_question'] as const).map((fn) =>
    fc.record({ task: taskRef, words: text, percent: fc.option(fc.integer({ min: -5, max: 105 })), by: party }).map((a): Call => async (w) => {
      const word = { reject_task: 'p_reason', cancel_task: 'p_reason', report_progress: 'p_message', ask_question: 'p_question', answer_question: 'p_answer' }[fn];
      const id = a.task(w);
      return [fn, { p_task_id: id, [word]: a.words, ...(fn === 'report_progress' ? { p_percent: a.percent } : {}) }, await partyOf(id, a.by)];
    })),
  fc.record({ task: taskRef, to: agentRef, reason: fc.option(text), by: party })
    .map((a): Call => async (w) => {
      const id = a.task(w);
      return ['reassign_task', { p_task_id: id, p_to_agent: a.to(w), p_reason: a.reason }, await partyOf(id, a.by)];
    }),
  fc.record({ task: taskRef, name: mostly(fc.constantFrom('report.md', 'out.json'), fc.oneof(fc.constant('../etc/passwd'), text)), content: fc.uint8Array({ maxLength: 64 }), by: party })
    .map((a): Call => async (w) => {
      const id = a.task(w);
      return ['attach_artifact', { p_task_id: id, p_name: a.name, p_media_type: 'text/plain', p_content: Buffer.from(a.content).toString('hex') }, await partyOf(id, a.by)];
    }),
  fc.record({ to: fc.option(agentRef), kind: fc.constantFrom(...kinds), body: json, task: fc.option(taskRef) })
    .map((a): Call => async (w) => ['agent_messages', { to_agent: a.to?.(w) ?? null, kind: a.kind, body: a.body, task_id: a.task?.(w) ?? null }]),
  fc.record({ message: text, every: fc.option(fc.constantFrom('2 seconds', '15 minutes', '0 seconds', '30 days', 'soon')) })
    .map((a): Call => async () => ['send_heartbeat', { p_status_message: a.message, p_poll_interval: a.every }]),
  fc.record({ task: taskRef, token: fc.nat(9) }).map((a): Call => async (w) => {
    const id = a.task(w);
    return ['check_claims', { p_task_ids: [id], p_claim_tokens: [await tokenFor(id, a.token)], p_renew: true }];
  }),
  fc.constant<Call>(async () => ['sweep_tasks', {}]),
  fc.record({ task: taskRef }).map((a): Call => async (w) => ['task_inputs', { p_task_id: a.task(w) }]),
  fc.record({ task: taskRef }).map((a): Call => async (w) => ['task_chain', { p_task_id: a.task(w) }]),
];

// Hand-offs and claims are the most common calls, so that the rest have tasks to work on.
const step = fc.record({ who: fc.nat(), call: fc.oneof({ arbitrary: calls[0]!, weight: 6 }, { arbitrary: calls[1]!, weight: 3 }, { arbitrary: calls[2]!, weight: 3 },
  ...calls.slice(3).map((arbitrary) => ({ arbitrary, weight: 1 }))) });

/** Makes the call as agent `as`; returns what went wrong in a way no caller should ever see. */
async function run(world: World, anyone: TestAgent, call: Call): Promise<string | undefined> {
  const [fn, args, actor] = await call(world);
  const as = world.agents.find((a) => a.id === actor) ?? anyone;
  let result: { status: number; error: { code?: string; message: string } | null; data: unknown };
  try {
    result = fn === 'agent_messages'
      ? await untyped(as.client.db).from('agent_messages').insert({ ...args, from_agent: as.id }).select('id')
      : await untyped(as.client.db).rpc(fn, args);
  } catch (err) {
    return `${fn}: the call itself failed: ${(err as Error).message}`;
  }
  if (result.status >= 500 || result.status === 0) return `${fn} ${JSON.stringify(args).slice(0, 300)}: HTTP ${result.status} ${result.error?.code} ${result.error?.message}`;
  if (fn === 'handoff_task' && !result.error) world.tasks.push((result.data as { id: string }).id);
  const outcome = `${fn} ${result.error?.code ?? 'ok'}`;
  world.outcomes.set(outcome, (world.outcomes.get(outcome) ?? 0) + 1);
  return undefined;
}

/** Everything that must hold whatever the agents did. */
async function invariants(agentIds: string[]): Promise<string[]> {
  const problems: string[] = [];
  const scope = 'select id from task_handoffs where from_agent = any($1)';
  const check = async (what: string, sql: string) => {
    const { rows } = await db.query(sql, [agentIds]);
    if (rows.length) problems.push(`${what}: ${JSON.stringify(rows.slice(0, 3))}`);
  };
  await check('an illegal status path', `
    select e.task_id, e.from_status, e.to_status from task_events e
    where e.task_id in (${scope}) and e.from_status is not null and e.from_status <> e.to_status
      and not exists (select from task_status_transitions tr where tr.from_status = e.from_status and tr.to_status = e.to_status)`);
  await check('an event that does not follow the one before it', `
    select task_id, from_status, prev from (
      select e.task_id, e.from_status, lag(e.to_status) over (partition by e.task_id order by e.id) as prev, e.id,
             row_number() over (partition by e.task_id order by e.id) as n
      from task_events e where e.task_id in (${scope})) x
    where (n = 1 and (from_status is not null)) or (n > 1 and from_status is distinct from prev)`);
  await check('a status other than its last event', `
    select t.id, t.status, last.to_status from task_handoffs t
    join lateral (select e.to_status from task_events e where e.task_id = t.id order by e.id desc limit 1) last on true
    where t.id in (${scope}) and t.status <> last.to_status`);
  await check('a holder that does not match the status', `
    select id, status, claimed_by, claim_token from task_handoffs where id in (${scope})
      and ((status in ('claimed', 'in_progress', 'input_required')) <> (claimed_by is not null and claim_token is not null)
           or (status = 'pending' and claimed_by is not null))`);
  // Claims never take an agent past max_concurrent. A task waiting for an answer holds no slot, and one
  // resumed by its answer goes on even when the agent is full: so the tasks an agent works on, less
  // those whose latest way into work was an answer, are at most max_concurrent.
  await check('an agent over its max_concurrent', `
    select a.id, a.max_concurrent, count(*) from agents a join task_handoffs t on t.claimed_by = a.id
    join lateral (select e.from_status from task_events e where e.task_id = t.id and e.to_status in ('claimed', 'in_progress')
                  and e.from_status is distinct from 'claimed' order by e.id desc limit 1) entered on true
    where a.id = any($1) and t.status in ('claimed', 'in_progress') and entered.from_status is distinct from 'input_required'
    group by a.id, a.max_concurrent having count(*) > a.max_concurrent`);
  await check('a task whose first event is not by its sender', `
    select t.id, t.from_agent, first.actor from task_handoffs t
    join lateral (select e.actor from task_events e where e.task_id = t.id order by e.id limit 1) first on true
    where t.id in (${scope}) and first.actor <> t.from_agent`);
  await check('a field over its limit', `
    select id from task_handoffs where id in (${scope}) and (length(title) > 200 or octet_length(payload::text) > 262144
      or length(status_reason) > 4000 or length(progress_message) > 2000 or octet_length(problems::text) > 65536
      or jsonb_path_exists(payload, 'strict $.**{32 to last}'))
    union all select task_id from task_events where task_id in (${scope}) and length(note) > 2000
    union all select id from agent_messages where from_agent = any($1) and (octet_length(body::text) > 65536 or jsonb_path_exists(body, 'strict $.**{32 to last}'))`);
  await check('an artifact whose hash does not match its content', `
    select task_id, name from task_artifacts where task_id in (${scope}) and content is not null
      and (sha256 <> encode(sha256(content), 'hex') or size_bytes <> length(content))`);
  await check('a message kind only the database may write, sent by an agent about a task it did not hold', `
    select m.id, m.kind from agent_messages m join task_handoffs t on t.id = m.task_id
    where m.from_agent = any($1) and m.kind in ('question', 'progress') and not exists (
      select from task_events e where e.task_id = t.id and e.actor = m.from_agent and e.to_status in ('claimed', 'in_progress'))`);
  return problems;
}

describe('fuzzing every RPC', () => {
  it('never answers 5xx or drops a connection, and keeps every invariant', { timeout: 120_000 }, async () => {
    const agents = await Promise.all(capabilities.concat('none').map((cap, i) =>
      own.newAgent(`fuzz${i}`, { capabilities: cap === 'none' ? [] : [cap, capabilities[(i + 1) % 3]!], maxConcurrent: 3 + 3 * (i % 3) })));
    const world: World = { agents, tasks: [], outcomes: new Map() };
    const ids = agents.map((a) => a.id);
    await fc.assert(fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { minLength: 5, maxLength: 15 }), async (rounds) => {
      for (const round of rounds) {
        // Each round's calls run at once, so that races are part of what is tried.
        const failures = (await Promise.all(round.map(({ who, call }) => run(world, agents[who % agents.length]!, call)))).filter(Boolean);
        expect(failures).toEqual([]);
      }
      expect(await invariants(ids)).toEqual([]);
    }), { numRuns: 40, endOnFailure: true, seed: Number(process.env.FUZZ_SEED ?? 20261122) });
    if (process.env.FUZZ_REPORT) console.log([...world.outcomes].sort().map(([k, v]) => `${k}: ${v}`).join('\n'));
    // The calls got past the refusals to real work.
    for (const fn of ['handoff_task', 'claim_task', 'claim_next_tasks', 'complete_task', 'fail_task', 'report_progress', 'sweep_tasks']) {
      expect(world.outcomes.get(`${fn} ok`) ?? 0, `${fn} never succeeded`).toBeGreaterThan(0);
    }
  });
});

/**
 * Numbers Postgres' numeric takes that are no amount: 'NaN' (greater than every number there, so a check
 * like `> 0` passes it) and the infinities, in the spellings numeric's input reads.
 */
const notAmounts = fc.constantFrom('NaN', 'nan', 'Infinity', 'infinity', '-Infinity', 'inf', '+inf', '-inf');

describe('amounts that are no number', () => {
  it('are refused by every numeric parameter of every RPC (BT005), and nothing stored changes', { timeout: 120_000 }, async () => {
    const [sender, worker] = await Promise.all([own.newAgent('nan-sender'), own.newAgent('nan-worker')]);
    const budgeted = await sender.client.handoff({ to: worker.id, title: 'budgeted', budget: { tokens: 10_000, usd: 5 } });
    const held = await worker.client.claim(budgeted.id, { start: true });
    await worker.client.recordUsage(budgeted.id, held.claim_token, { runtime: 'test', model: 'm', inputTokens: 10, outputTokens: 0, costUsd: 0.5 });
    /** How each numeric parameter is reached: the call, as whom. A parameter missing here fails the test. */
    const doors: Record<string, (x: string) => [TestAgent, string, Record<string, unknown>]> = {
      'handoff_task.p_budget_usd': (x) => [sender, 'handoff_task', { p_title: 'nan', p_to_agent: worker.id, p_budget_usd: x }],
      'set_budget.p_usd': (x) => [sender, 'set_budget', { p_task_id: budgeted.id, p_usd: x }],
      'record_usage.p_cost_usd': (x) => [worker, 'record_usage', { p_task_id: budgeted.id, p_claim_token: held.claim_token, p_runtime: 'test', p_model: 'm', p_cost_usd: x }],
    };
    // And the amounts that come inside JSON: a batch's and a fan-out's budget_usd.
    const inJson: Array<(x: string) => [TestAgent, string, Record<string, unknown>]> = [
      (x) => [sender, 'handoff_tasks', { p_tasks: [{ title: 'nan', to_agent: worker.id, budget_usd: x }] }],
      (x) => [worker, 'fan_out', { p_parent_task_id: budgeted.id, p_tasks: [{ title: 'nan', to_agent: worker.id, budget_usd: x }] }],
    ];
    const { rows: params } = await db.query(`
      select p.proname || '.' || a.name as param from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      cross join lateral unnest(p.proargnames, p.proargtypes::oid[]) as a (name, type)
      where n.nspname = 'public' and a.type in ('numeric'::regtype, 'float4'::regtype, 'float8'::regtype) order by 1`);
    expect(params.map((r) => r.param).sort()).toEqual(Object.keys(doors).sort());
    const stored = async () => (await db.query(`
      select (select json_agg(b order by task_id) from task_budgets b where task_id = $1 or parent_budget = $1) as budgets,
             (select json_agg(r order by model) from task_runs r where task_id = $1) as runs,
             (select json_agg(d order by agent_id) from agent_daily_spend d where agent_id = any($2)) as days,
             (select count(*) from task_handoffs where from_agent = any($2)) as tasks`, [budgeted.id, [sender.id, worker.id]])).rows[0];
    const before = await stored();
    await fc.assert(fc.asyncProperty(notAmounts, fc.constantFrom(...Object.values(doors), ...inJson), async (x, door) => {
      const [as, fn, args] = door(x);
      const { error, data } = await untyped(as.client.db).rpc(fn, args);
      // A batch answers per item.
      const code = error?.code ?? (Array.isArray(data) ? data[0]?.code : undefined);
      expect(code, `${fn} with ${x}: ${JSON.stringify(error ?? data)}`).toBe('BT005');
      expect(JSON.stringify(error ?? data)).toMatch(/must be a finite number/);
    }), { numRuns: 60, seed: Number(process.env.FUZZ_SEED ?? 20261213) });
    // An operator's daily cap, written through REST: NaN by the check, an infinity by the column's own
    // precision already (22003, numeric field overflow).
    for (const [x, code] of [['NaN', 'BT005'], ['Infinity', '22003']]) {
      const { error } = await untyped(own.admin.db).from('agents').update({ daily_usd_cap: x }).eq('id', worker.id);
      expect(error?.code, x).toBe(code);
    }
    expect(await stored()).toEqual(before);
    const { rows: [agent] } = await db.query('select daily_usd_cap from agents where id = $1', [worker.id]);
    expect(agent.daily_usd_cap).toBeNull();
  });
});
