/**
 * The web board on a large project: 100,000 finished tasks and 10,000 open ones (BENCH_FINISHED,
 * BENCH_OPEN), seeded straight into the database. In headless Chromium: first contentful paint and the
 * time until the overview's numbers are on the page, the task table's first page, the agents view, how
 * long a hand-off takes to appear on an open page (push → server-sent event → the page), and the last
 * page of a filter that half the finished tasks match, with its exact count. Medians of
 * BENCH_RUNS fresh page loads each.
 *
 *   npm run bench:board
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { BoardData } from '../src/board/data.js';
import { startBoard } from '../src/board/server.js';
import { createAdminClient, createBatonClient, parseSigningKey } from '../src/index.js';
import { silentLogger } from '../src/logger.js';
import { startStackProcess } from './stack-process.js';
import { median } from './stats.js';

const FINISHED = Number(process.env.BENCH_FINISHED ?? 100_000);
const OPEN = Number(process.env.BENCH_OPEN ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const chromiumPath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && fs.existsSync(p));
const say = (text: string) => process.stdout.write(`${text}\n`);
if (!chromiumPath) {
  say('bench:board needs Chromium (apt-get install chromium, or set CHROMIUM_PATH); skipped.');
  process.exit(0);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-board-bench-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
const db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
db.on('error', () => undefined);
try {
  const { env } = stack;
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const agents = await Promise.all(Array.from({ length: 20 }, (_, i) => admin.createAgent({ id: `agent-${i}`, capabilities: [`skill-${i % 5}`] })));
  const seeded = Date.now();
  // Straight into the table, triggers off (a bulk load, not hand-offs): finished over the last two hours, then open.
  const client = await db.connect();
  try {
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    await client.query(`
      insert into task_handoffs (from_agent, to_agent, title, status, claimed_by, attempts, result, created_at, updated_at, completed_at, root_task_id, id)
      select 'agent-' || (x.i % 20), 'agent-' || ((x.i + 1) % 20), 'finished task ' || x.i || case when x.i % 2 = 0 then ' even' else '' end,
             (case when x.i % 50 = 0 then 'failed' else 'completed' end)::task_status, 'agent-' || ((x.i + 1) % 20), 1,
             '{"status": "success", "summary": "done"}', now() - (x.i % 7200) * interval '1 second', now() - (x.i % 7200) * interval '1 second',
             now() - (x.i % 7200) * interval '1 second' + interval '1 second', x.id, x.id
      from (select i, gen_random_uuid() as id from generate_series(1, $1::integer) i) x`, [FINISHED]);
    await client.query(`
      insert into task_handoffs (from_agent, to_agent, required_capabilities, title, status, claimed_by, root_task_id, id)
      select 'agent-' || (x.i % 20), case when x.i % 3 = 0 then null else 'agent-' || ((x.i + 7) % 20) end,
             case when x.i % 3 = 0 then array['skill-' || (x.i % 5)] else '{}' end, 'open task ' || x.i,
             (case when x.i % 4 = 0 then 'in_progress' else 'pending' end)::task_status,
             case when x.i % 4 = 0 then 'agent-' || ((x.i + 7) % 20) end, x.id, x.id
      from (select i, gen_random_uuid() as id from generate_series(1, $1::integer) i) x`, [OPEN]);
    await client.query('commit');
  } finally {
    client.release();
  }
  await db.query('analyze task_handoffs');
  say(`Seeded ${FINISHED.toLocaleString('en')} finished and ${OPEN.toLocaleString('en')} open tasks in ${((Date.now() - seeded) / 1000).toFixed(1)} s.`);

  const board = await startBoard({ data: new BoardData({ kind: 'operator', admin }), log: silentLogger });
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const warm = await context.newPage();
    await warm.goto(board.url);
    await warm.locator('.cards').waitFor();
    await warm.close();
    const paint: number[] = [];
    const overview: number[] = [];
    const tasks: number[] = [];
    const agentsView: number[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const page = await context.newPage();
      await page.goto(`${board.origin}/`);
      await page.locator('.cards').waitFor();
      const [fcp, shown] = await page.evaluate(() => [
        performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN, performance.now()]);
      paint.push(fcp!);
      overview.push(shown!);
      for (const [hash, selector, into] of [['#/tasks', 'table.tasks tbody tr', tasks], ['#/agents', 'tr[data-agent]', agentsView]] as const) {
        const started = Date.now();
        await page.evaluate((h) => { location.hash = h; }, hash);
        await page.locator(selector).first().waitFor();
        into.push(Date.now() - started);
      }
      await page.close();
    }
    const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: agents[0]!.token });
    const page = await context.newPage();
    await page.goto(`${board.origin}/#/tasks`);
    await page.locator('table.tasks tbody tr').first().waitFor();
    await page.waitForFunction(() => document.querySelector('.live')?.textContent === 'live', undefined, { timeout: 30_000 });
    const appear: number[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const started = Date.now();
      const task = await sender.handoff({ to: 'agent-1', title: `fresh ${run}`, allowOffline: true });
      await page.locator(`tr[data-task="${task.id}"]`).waitFor({ timeout: 30_000 });
      appear.push(Date.now() - started);
    }
    // The last page of a filter that half the finished tasks match (50,000 of the default 100,000),
    // opened as a user would, by its address: its rows, and the exact count of pages.
    const matching = Math.floor(FINISHED / 2);
    const lastPage = Math.ceil(matching / 100) - 1;
    const paging: number[] = [];
    const want = `Page ${lastPage + 1} of ${lastPage + 1} (${matching} tasks)`;
    for (let run = 0; run < RUNS; run += 1) {
      const started = Date.now();
      await page.evaluate((h) => { location.hash = h; }, `#/tasks?q=even&size=100&page=${lastPage}`);
      await page.locator('table.tasks tbody tr').first().waitFor();
      await page.waitForFunction((text) => document.querySelector('nav.pager span')?.textContent === text, want, { timeout: 60_000 })
        .catch(async (err: Error) => { throw new Error(`the last page did not say "${want}" but "${await page.locator('nav.pager span').textContent()}": ${err.message}`); });
      paging.push(Date.now() - started);
      await page.evaluate(() => { location.hash = '#/tasks'; });
      await page.locator('table.tasks tbody tr').first().waitFor();
    }
    const ms = (values: number[]) => `${median(values).toFixed(0)} ms (${values.map((v) => v.toFixed(0)).join(', ')})`;
    say(`Board as the operator, ${RUNS} fresh page loads each, medians:`);
    say(`  first contentful paint          ${ms(paint)}`);
    say(`  overview's numbers on the page  ${ms(overview)}`);
    say(`  tasks view, first page          ${ms(tasks)}`);
    say(`  agents view                     ${ms(agentsView)}`);
    say(`  a hand-off appears on the page  ${ms(appear)} (from the call to the row)`);
    say(`  the last page of ${matching.toLocaleString('en')} matching  ${ms(paging)} (it says "${want}")`);
  } finally {
    await browser.close();
    await board.close();
  }
} finally {
  await db.end();
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
