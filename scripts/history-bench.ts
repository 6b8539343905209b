/**
 * Whether Baton stays flat as its history grows: at each size of history, a retention pass (the sweep
 * that deletes up to retention_batch finished tasks), a claim, a hand-off and the board's overview (as
 * the worker's board, the board of the sender of the whole history, and the operator's), each timed through the API as its caller makes it. Medians of HISTORY_RUNS calls at each size, and the ratio of the largest
 * size to the smallest.
 *
 * The history is seeded as real completions leave it: one task is handed off, claimed, asked about and
 * answered, given progress and an artifact, and completed through the API, with a direct message
 * beside it; then its rows (task, events, messages with their replies, artifacts) are copied in SQL,
 * each copy with ids of its own and its times moved back, as one sender's history builds up: at a steady
 * HISTORY_PER_DAY finished tasks a day (default 8,333: a million over four months), the newest a minute
 * ago. So a larger history is a longer one, and the last day, which the board's overview counts, holds
 * as many at every size past a day's worth; copies older than keep_finished (seven days here) are due
 * for retention. The copies are made with triggers off (session_replication_role), as a restore is:
 * the template passed every rule once, and the copies have its shape; then analysed, as autovacuum
 * does after a bulk load.
 *
 *   npm run bench:history
 *   HISTORY_SIZES=10000,1000000 HISTORY_RUNS=3 npm run bench:history
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BoardData } from '../src/board/data.js';
import { createAdminClient, createBatonClient, parseSigningKey, type BatonClient } from '../src/index.js';
import { startStackProcess } from './stack-process.js';
import { median } from './stats.js';

const SIZES = (process.env.HISTORY_SIZES ?? '10000,3000000').split(',').map(Number).sort((a, b) => a - b);
const RUNS = Number(process.env.HISTORY_RUNS ?? 5);
const PER_DAY = Number(process.env.HISTORY_PER_DAY ?? 8333);
const BATCH = 200_000;
const say = (text: string) => process.stdout.write(`${text}\n`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-history-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
db.on('error', () => undefined);

interface Row { size: number; retention: number; deleted: number; claim: number; handoff: number; agentOverview: number; senderOverview: number; operatorOverview: number }

try {
  const { env } = stack;
  await db.query(`update baton_settings set keep_finished = '7 days', handoffs_per_minute = 1000000, open_tasks_per_sender = 1000000`);
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const connect = async (id: string): Promise<BatonClient> => {
    const { token } = await admin.createAgent({ id });
    return createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token });
  };
  const sender = await connect('history-sender');
  const worker = await connect('history-worker');
  const agentBoard = new BoardData({ kind: 'agent', client: worker });
  // The sender of the whole history, whose board sees every task of it.
  const senderBoard = new BoardData({ kind: 'agent', client: sender });
  const operatorBoard = new BoardData({ kind: 'operator', admin });

  // The template: one task as a real completion leaves it, and a direct message.
  const task = await sender.handoff({ to: 'history-worker', title: 'summarise the report', payload: { report: 'q3', pages: 12 } });
  const [claimed] = await worker.claimNext({ limit: 1 });
  await worker.start(task.id, claimed!.claim_token!);
  await worker.progress(task.id, 'read 6 of 12 pages', 50);
  await worker.ask(task.id, 'Which sections matter most?');
  await sender.answer(task.id, 'Revenue and risks.');
  await worker.attachArtifact(task.id, 'summary.md', '# Q3\nRevenue up; risks noted.\n', { mediaType: 'text/markdown' });
  await worker.complete(task.id, claimed!.claim_token!, { status: 'success', summary: 'Summarised.', metrics: { pages: 12 } });
  const direct = await sender.send({ to: 'history-worker', body: { text: 'thanks' } });

  const columns = async (table: string) => (await db.query<{ name: string }>(
    `select column_name as name from information_schema.columns where table_schema = 'public' and table_name = $1
     and is_generated = 'NEVER' and identity_generation is null order by ordinal_position`, [table])).rows.map((r) => r.name);
  const times = new Set(['created_at', 'updated_at', 'claimed_at', 'started_at', 'completed_at', 'progress_at', 'at', 'read_at', 'declined_at']);
  /** An INSERT … SELECT copying `table`'s template rows (alias t) once per seed (alias s), some columns rewritten. */
  const copy = async (table: string, where: string, rewrite: Record<string, string>) => {
    const names = await columns(table);
    const values = names.map((name) => rewrite[name] ?? (times.has(name) ? `t.${name} - s.shift` : `t.${name}`));
    return `insert into public.${table} (${names.join(', ')}) select ${values.join(', ')} from public.${table} t, seed s where ${where}`;
  };
  const newId = (column: string) => `md5(t.${column}::text || s.id::text)::uuid`;
  const statements: Array<[string, string]> = [
    [await copy('task_handoffs', 't.id = $1', { id: 's.id', root_task_id: 's.id', idempotency_key: 'null' }), task.id],
    [await copy('task_events', 't.task_id = $1', { task_id: 's.id' }), task.id],
    [await copy('task_artifacts', 't.task_id = $1', { id: 'gen_random_uuid()', task_id: 's.id' }), task.id],
    [await copy('agent_messages', 't.task_id = $1', { id: newId('id'), task_id: 's.id', reply_to_id: `case when t.reply_to_id is not null then ${newId('reply_to_id')} end` }), task.id],
    [await copy('agent_messages', 't.id = $1', { id: newId('id') }), direct.id],
  ];

  let seeded = 0;
  const grow = async (size: number) => {
    const client = await db.connect();
    try {
      while (seeded < size) {
        const count = Math.min(BATCH, size - seeded);
        await client.query('begin');
        await client.query('set local session_replication_role = replica');
        // Older copies have larger numbers, a day's worth every PER_DAY: retention takes the oldest first.
        await client.query(`create temp table seed on commit drop as
          select gen_random_uuid() as id, interval '1 minute' + g * (interval '1 day' / ${PER_DAY}) as shift
          from generate_series($1::int, $2::int) g`, [seeded + 1, seeded + count]);
        for (const [statement, template] of statements) await client.query(statement, [template]);
        await client.query('commit');
        seeded += count;
        say(`  seeded ${seeded.toLocaleString('en')} finished tasks`);
      }
      for (const table of ['task_handoffs', 'task_events', 'task_artifacts', 'agent_messages']) await client.query(`vacuum analyze public.${table}`);
    } finally {
      client.release();
    }
  };

  const timed = async (call: () => Promise<unknown>) => {
    const started = performance.now();
    await call();
    return performance.now() - started;
  };

  const rows: Row[] = [];
  for (const size of SIZES) {
    await grow(size);
    const retention: number[] = [];
    const deleted: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      let report: { retention_deleted?: number } = {};
      retention.push(await timed(async () => { report = await worker.sweep() as typeof report; }));
      deleted.push(report.retention_deleted ?? 0);
    }
    // Retention took some: seed them back, so the next size starts where it says.
    seeded -= deleted.reduce((a, b) => a + b, 0);
    const claim: number[] = [];
    const handoff: number[] = [];
    for (let i = 0; i < RUNS * 4; i++) {
      handoff.push(await timed(() => sender.handoff({ to: 'history-worker', title: `now ${i}`, payload: { i } })));
      let got: Awaited<ReturnType<BatonClient['claimNext']>> = [];
      claim.push(await timed(async () => { got = await worker.claimNext({ limit: 1, start: true }); }));
      await worker.complete(got[0]!.id, got[0]!.claim_token!, { status: 'success' });
    }
    // The board's overview, as it reads it on every visit: the counts, the last hour, the agents.
    const agentOverview: number[] = [];
    const senderOverview: number[] = [];
    const operatorOverview: number[] = [];
    for (let i = 0; i < RUNS * 4; i++) {
      agentOverview.push(await timed(() => agentBoard.overview()));
      senderOverview.push(await timed(() => senderBoard.overview()));
      operatorOverview.push(await timed(() => operatorBoard.overview()));
    }
    rows.push({ size, retention: median(retention), deleted: median(deleted), claim: median(claim), handoff: median(handoff), agentOverview: median(agentOverview), senderOverview: median(senderOverview), operatorOverview: median(operatorOverview) });
    say(`  ${size.toLocaleString('en')}: retention ${median(retention).toFixed(0)} ms (${median(deleted)} tasks), claim ${median(claim).toFixed(1)} ms, hand-off ${median(handoff).toFixed(1)} ms, overview ${median(agentOverview).toFixed(1)} ms (the worker), ${median(senderOverview).toFixed(1)} ms (the sender), ${median(operatorOverview).toFixed(1)} ms (operator)`);
  }

  const first = rows[0]!;
  const last = rows.at(-1)!;
  say(`\nHistory of finished tasks, medians of ${RUNS} retention passes and ${RUNS * 4} claims, hand-offs and overviews, through the API`);
  say('| finished tasks | retention pass ms (tasks deleted) | claim ms | hand-off ms | overview ms, the worker | overview ms, the sender | overview ms, operator |');
  say('| --- | --- | --- | --- | --- | --- | --- |');
  for (const row of rows) say(`| ${row.size.toLocaleString('en')} | ${row.retention.toFixed(0)} (${row.deleted}) | ${row.claim.toFixed(1)} | ${row.handoff.toFixed(1)} | ${row.agentOverview.toFixed(1)} | ${row.senderOverview.toFixed(1)} | ${row.operatorOverview.toFixed(1)} |`);
  const ratio = (key: keyof Row) => `${(last[key] / first[key]).toFixed(2)}×`;
  say(`| ${last.size.toLocaleString('en')} ÷ ${first.size.toLocaleString('en')} | ${ratio('retention')} | ${ratio('claim')} | ${ratio('handoff')} | ${ratio('agentOverview')} | ${ratio('senderOverview')} | ${ratio('operatorOverview')} |`);
} finally {
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
