/**
 * The web board in a real browser (Debian's headless Chromium, driven by playwright-core) against a real
 * stack of its own: the page loads clean, a CLI hand-off appears and moves as a daemon runs it, its page
 * shows the history, the artifact's hash and the lineage graph, a dead letter is retried from the page,
 * an agent's board sees none of a stranger's tasks, a request without the access token is refused, and
 * axe finds no accessibility violation. Screenshots of each view, light and dark, wide and on a phone, go to
 * test-results/board/ (<view>-<scheme>-<size>.png).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import axe from 'axe-core';
import pg from 'pg';
import { BoardData } from '../src/board/data.js';
import { startBoard, type Board } from '../src/board/server.js';
import { silentLogger } from '../src/logger.js';
import { cliAs } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { agentKey } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const chromiumPath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && fs.existsSync(p));
if (!chromiumPath) {
  console.warn('board.test.ts skipped: no Chromium found (apt-get install chromium, or set CHROMIUM_PATH); .ci/run installs it.');
}
/** The status of a GET sent with this Host header (fetch will not send one of its own choosing). */
const statusWithHost = (url: string, host: string, token: string) => new Promise<number>((resolve, reject) => {
  http.get(url, { headers: { host, authorization: `Bearer ${token}` } }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
});
const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'test-results', 'board');

describe.skipIf(!chromiumPath)('baton board in a browser', () => {
  const own = ownStack('board');
  let browser: Browser;
  let operator: Board;
  const errorsOf = new Map<Page, string[]>();

  beforeAll(async () => {
    fs.mkdirSync(shots, { recursive: true });
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    operator = await startBoard({ data: new BoardData({ kind: 'operator', admin: own.admin }), log: silentLogger });
  });
  afterAll(async () => {
    await operator?.close();
    await browser?.close();
  });

  /** A page of `board`, signed in through its URL, that records every console error and page error. */
  async function open(board: Board, hash = ''): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    errorsOf.set(page, errors);
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(board.url);
    if (hash) await page.goto(`${board.origin}/${hash}`);
    return page;
  }
  const shoot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const statusIn = (page: Page, taskId: string) => page.locator(`tr[data-task="${taskId}"] .badge`).first().textContent();

  it('refuses every request without the access token, and a write without the CSRF token', async () => {
    const api = await fetch(`${operator.origin}/api/tasks`);
    expect(api.status).toBe(401);
    expect(await api.json()).toMatchObject({ message: 'this board needs its access token', hint: expect.stringContaining('?token=') });
    const page = await fetch(`${operator.origin}/`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('This board needs its access token');
    expect((await fetch(`${operator.origin}/?token=not-it`)).status).toBe(401);
    expect((await fetch(`${operator.origin}/api/session`, { headers: { cookie: 'baton_board=made-up' } })).status).toBe(401);
    // A page of another site that resolves to this address (DNS rebinding) is refused by its Host.
    expect(await statusWithHost(`${operator.origin}/api/session`, 'evil.example', operator.accessToken)).toBe(403);
    expect(await statusWithHost(`${operator.origin}/api/session`, 'localhost', operator.accessToken)).toBe(200);

    const signedIn = await fetch(operator.url, { redirect: 'manual' });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/');
    const cookie = signedIn.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const session = cookie.split(';')[0]!;
    const noCsrf = await fetch(`${operator.origin}/api/actions`, { method: 'POST', headers: { cookie: session, 'content-type': 'application/json' }, body: '{"action":"pause","schedule":"x"}' });
    expect(noCsrf.status).toBe(403);
    expect(await noCsrf.json()).toMatchObject({ code: 'CSRF' });
    const { csrf } = await (await fetch(`${operator.origin}/api/session`, { headers: { cookie: session } })).json() as { csrf: string };
    const withCsrf = await fetch(`${operator.origin}/api/actions`, { method: 'POST', headers: { cookie: session, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: '{"action":"pause","schedule":"no-such-schedule"}' });
    expect(await withCsrf.json()).toMatchObject({ message: 'no schedule named "no-such-schedule"' });
    // A script with the access token as Bearer acts without a CSRF token (no browser sends that header by
    // itself); a refusal by the database is a 403, not a request to sign in again.
    const token = new URL(operator.url).searchParams.get('token')!;
    const byScript = await fetch(`${operator.origin}/api/actions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"action":"pause","schedule":"no-such-schedule"}' });
    expect(await byScript.json()).toMatchObject({ message: 'no schedule named "no-such-schedule"' });
    const [lead, coder] = await Promise.all([own.newAgent('bearer-lead'), own.newAgent('bearer-coder')]);
    const held = await lead.client.handoff({ to: coder.id, title: 'cancel me', allowOffline: true });
    const refused = await fetch(`${operator.origin}/api/actions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ action: 'cancel', task: held.id, reason: 'no' }) });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'BT006' });
    // A path that is not valid percent-encoding is the caller's mistake, said as such.
    const malformed = await fetch(`${operator.origin}/api/tasks/%E0%A4%A`, { headers: { cookie: session } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ message: expect.stringContaining('not valid percent-encoding') });
    // A short or mistyped task id names no task: not found, said in one line, never zod's issue list.
    for (const path of ['/api/tasks/1f6c', `/api/tasks/1f6c/artifacts/notes.txt`]) {
      const short = await fetch(`${operator.origin}${path}`, { headers: { cookie: session } });
      expect(short.status).toBe(404);
      expect(await short.json()).toMatchObject({ code: 'BT002', message: expect.stringMatching(/^(no task 1f6c that this board may see|task 1f6c has no artifact "notes.txt")$/), hint: expect.stringContaining('UUID') });
    }
    const badQuery = await fetch(`${operator.origin}/api/tasks?size=many`, { headers: { cookie: session } });
    expect(badQuery.status).toBe(400);
    expect(await badQuery.json()).toMatchObject({ code: 'BT005', message: expect.not.stringContaining('[') });
  });

  it('shows a CLI hand-off appear and move as a daemon runs it, and its history, artifact hash and lineage', async () => {
    const lead = await own.newAgent('lead', { capabilities: ['plan'] });
    const coder = await own.newAgent('coder', { capabilities: ['code'] });
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    await daemon(coder, {
      url: own.env.SUPABASE_URL, ...agentKey(own.env),
      executors: {
        '*': async (task, ctx) => {
          if (task.parent_task_id) return { status: 'success', summary: 'checked' };
          await ctx.progress('parsing', 40);
          await held;
          await ctx.artifact('parser.json', { json: { ast: { kind: 'module', body: [1, 2, 3] } } });
          await ctx.handoff({ to: coder.id, title: 'Check the parser' });
          return { status: 'success', summary: 'parsed it' };
        },
      },
    });
    const page = await open(operator, '#/agents');
    await page.locator(`tr[data-agent="${coder.id}"]`).waitFor();
    expect(await page.locator(`tr[data-agent="${coder.id}"]`).textContent()).toContain('online');
    // Its rhythm in the words the CLI uses (5s), not as Postgres prints an interval (00:00:05).
    expect(await page.locator(`tr[data-agent="${coder.id}"]`).textContent()).toMatch(/wakes every \d+(\.\d+)?[smhd](?!\d)/);
    // The operator's board listens on the new agents' topics too: push, not polling, carries what follows.
    await eventually(async () => (await page.locator('.live').textContent()) === 'live', 20_000, 'push to be up on the page');
    await shoot(page, 'agents');

    await page.goto(`${operator.origin}/#/tasks`);
    await page.locator('table.tasks').waitFor();
    const cli = cliAs(lead.token, own.env);
    const handedAt = Date.now();
    const handed = await cli('handoff', coder.id, 'Write the parser', '--payload', '{"lang": "ts"}', '--json');
    expect(handed.code, handed.stderr).toBe(0);
    const taskId = (JSON.parse(handed.stdout) as { id: string }).id;
    await page.locator(`tr[data-task="${taskId}"]`).waitFor({ timeout: 20_000 });
    console.log(`board: the CLI's hand-off appeared on the open page ${Date.now() - handedAt} ms after the CLI was started`);
    await eventually(async () => (await statusIn(page, taskId)) === 'in progress', 20_000, 'the task in progress on the page');
    await shoot(page, 'tasks');
    release();
    await eventually(async () => (await statusIn(page, taskId)) === 'completed', 20_000, 'the task completed on the page');

    await page.locator(`tr[data-task="${taskId}"] a.task-link`).click();
    await page.locator('#task-title').waitFor();
    expect(await page.locator('#task-title').textContent()).toContain('Write the parser');
    const history = await page.locator('.timeline li').evaluateAll((items) => items.map((li) => li.getAttribute('data-to')));
    expect(history).toEqual(['pending', 'in_progress', 'completed']);
    const [stored] = await own.admin.db.from('task_artifacts').select('sha256').eq('task_id', taskId).then((r) => r.data!);
    expect(await page.locator('tr[data-artifact="parser.json"] .hash').textContent()).toBe(stored!.sha256);
    const child = await eventually(async () => (await own.admin.db.from('task_handoffs').select('id').eq('parent_task_id', taskId)).data?.[0]);
    await page.locator(`.graph [data-task="${child.id}"]`).waitFor();
    expect(await page.locator('.graph .node').count()).toBe(2);
    expect(await page.locator(`.graph .edge[data-from="${taskId}"][data-to="${child.id}"]`).count()).toBe(1);
    await page.locator('.artifact-json > summary').click();
    await page.locator('.artifact-json .json-key', { hasText: 'ast' }).waitFor();
    await shoot(page, 'task');
    expect(errorsOf.get(page)).toEqual([]);
    await page.close();
  });

  it('retries a dead letter from the page, and shows the database\'s refusal where the operator may not act', async () => {
    const sender = await own.newAgent('sender');
    const worker = await own.newAgent('worker');
    const doomed = await sender.client.handoff({ to: worker.id, title: 'Doomed', maxAttempts: 1, allowOffline: true });
    const [claimed] = await worker.client.claimNext();
    await worker.client.start(doomed.id, claimed!.claim_token);
    await worker.client.fail(doomed.id, claimed!.claim_token, 'the disk is full');
    const page = await open(operator, '#/dead-letters');
    const row = page.locator(`tr[data-task="${doomed.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('the disk is full');
    await shoot(page, 'dead-letters');
    await row.getByRole('button', { name: 'Retry' }).click();
    await row.getByText('retried as').waitFor();
    const { data: retries } = await own.admin.db.from('task_handoffs').select('id,status,from_agent,to_agent').eq('retry_of', doomed.id);
    expect(retries).toEqual([expect.objectContaining({ status: 'pending', from_agent: sender.id, to_agent: worker.id })]);

    // Cancelling and reassigning are the sender's: the operator's board does not offer them, and the
    // API, asked all the same, answers with the database's refusal.
    await page.goto(`${operator.origin}/#/task/${retries![0]!.id}`);
    await page.locator('.facts').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel task' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Reassign' }).count()).toBe(0);
    const token = new URL(operator.url).searchParams.get('token')!;
    const asked = await fetch(`${operator.origin}/api/actions`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'cancel', task: retries![0]!.id, reason: 'from a script' }),
    });
    expect(asked.status).toBe(403);
    expect(JSON.stringify(await asked.json())).toMatch(/BT006/);
    expect((await own.admin.db.from('task_handoffs').select('status').eq('id', retries![0]!.id).single()).data!.status).toBe('pending');
    await page.close();
  });

  it('pages to the last page of a filter, past what the planner estimates, with an exact total', async () => {
    const word = `pageword${Date.now().toString(36)}`;
    const senders = await Promise.all([0, 1, 2].map((i) => own.newAgent(`pager-${i}`)));
    const worker = await own.newAgent('pager-worker');
    for (const sender of senders) {
      await sender.client.handoffMany(Array.from({ length: 500 }, (_, i) => ({ to: worker.id, title: `${word} ${i}`, allowOffline: true })));
    }
    const token = new URL(operator.url).searchParams.get('token')!;
    const read = async (page: number) => {
      const res = await fetch(`${operator.origin}/api/tasks?status=pending&q=${word}&size=100&page=${page}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, await res.clone().text()).toBe(200);
      return await res.json() as { rows: unknown[]; total: number; exact: boolean };
    };
    const last = await read(14);
    expect(last).toMatchObject({ total: 1500, exact: true });
    expect(last.rows).toHaveLength(100);
    expect((await read(15)).rows).toEqual([]);
  });

  it('reaches the last page of a filter too large to count, which then says the exact total and offers no older page', async () => {
    // 25,000 finished tasks (two days old: no other test's counts move), loaded past the triggers as a long history is.
    const word = `bigword${Date.now().toString(36)}`;
    const [from, to] = await Promise.all([own.newAgent('big-sender'), own.newAgent('big-worker')]);
    const db = new pg.Client({ connectionString: own.adminUrl });
    await db.connect();
    try {
      await db.query('begin');
      await db.query('set local session_replication_role = replica');
      await db.query(`insert into task_handoffs (from_agent, to_agent, title, status, claimed_by, attempts, created_at, updated_at, completed_at, id, root_task_id)
        select $1, $2, $3 || ' ' || x.i, 'completed', $2, 1, now() - interval '2 days', now() - interval '2 days', now() - interval '2 days', x.id, x.id
        from (select i, gen_random_uuid() as id from generate_series(1, 25000) i) x`, [from.id, to.id, word]);
      await db.query('commit');
      await db.query('analyze task_handoffs');
    } finally {
      await db.end();
    }
    const token = new URL(operator.url).searchParams.get('token')!;
    const read = async (page: number) => {
      const res = await fetch(`${operator.origin}/api/tasks?q=${word}&size=100&page=${page}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, await res.clone().text()).toBe(200);
      return await res.json() as { rows: unknown[]; total: number; exact: boolean };
    };
    // Too many to count on every page: an estimate, never below what the pages already show.
    const first = await read(0);
    expect(first).toMatchObject({ exact: false });
    expect(first.total).toBeGreaterThan(100);
    expect(await read(120)).toMatchObject({ exact: false, total: expect.any(Number) });
    expect((await read(120)).total).toBeGreaterThan(12_100);
    // The last page knows the total.
    expect(await read(249)).toMatchObject({ total: 25_000, exact: true });
    const page = await open(operator, `#/tasks?q=${word}&size=100&page=249`);
    await page.locator('nav.pager span', { hasText: 'Page 250 of 250 (25000 tasks)' }).waitFor();
    expect(await page.locator('table.tasks tbody tr').count()).toBe(100);
    expect(await page.locator('nav.pager button', { hasText: 'Older page' }).isDisabled()).toBe(true);
    expect(errorsOf.get(page)).toEqual([]);
    await page.close();
  }, 120_000);

  it('shows a link stored before links were checked as text, and serves old content with only its type/subtype', async () => {
    const [lead, coder] = await Promise.all([own.newAgent('legacy-lead'), own.newAgent('legacy-coder')]);
    const task = await lead.client.handoff({ to: coder.id, title: 'Legacy artifacts', allowOffline: true });
    // Rows as an older Baton let them in: written past the triggers, as a restore would.
    const db = new pg.Client({ connectionString: own.adminUrl });
    await db.connect();
    try {
      await db.query("set session_replication_role = replica");
      await db.query(`insert into task_artifacts (task_id, name, media_type, uri, producer) values ($1, 'run.html', 'text/html', 'javascript://%0Adocument.title="owned"', $2)`, [task.id, coder.id]);
      await db.query(`insert into task_artifacts (task_id, name, media_type, content, producer) values ($1, 'page.txt', 'text/html;<b>x</b>', 'hello'::bytea, $2)`, [task.id, coder.id]);
    } finally {
      await db.end();
    }
    const page = await open(operator, `#/task/${task.id}`);
    await page.getByText('run.html').first().waitFor();
    expect(await page.locator('a[href^="javascript"]').count()).toBe(0);
    expect(await page.getByText('javascript://%0Adocument.title="owned"', { exact: false }).count()).toBeGreaterThan(0);
    const download = await page.request.get(`${operator.origin}/api/tasks/${task.id}/artifacts/page.txt`);
    expect(download.headers()['content-type']).toBe('text/html; charset=utf-8');
    await page.close();
  });

  it('as an agent, shows what that agent may see and none of a stranger\'s tasks', async () => {
    const me = await own.newAgent('me');
    const friend = await own.newAgent('friend');
    const strangerA = await own.newAgent('stranger');
    const strangerB = await own.newAgent('stranger');
    const mine = await me.client.handoff({ to: friend.id, title: 'Mine to see', allowOffline: true });
    const theirs = await strangerA.client.handoff({ to: strangerB.id, title: 'Not for me', allowOffline: true });
    const board = await startBoard({ data: new BoardData({ kind: 'agent', client: me.client }), log: silentLogger });
    try {
      const page = await open(board, '#/tasks');
      await page.locator(`tr[data-task="${mine.id}"]`).waitFor();
      const shown = await page.locator('tr[data-task]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-task')));
      expect(shown).toEqual([mine.id]);
      expect(await page.locator('.whoami').textContent()).toContain(`agent ${me.id}`);
      await shoot(page, 'tasks-as-agent');
      const api = (p: string) => page.evaluate((u) => fetch(u).then(async (r) => ({ status: r.status, body: await r.json() })), `/api/${p}`);
      expect((await api(`tasks/${theirs.id}`)).status).toBe(404);
      expect((await api(`tasks?agent=${strangerA.id}`)).body.rows).toEqual([]);
      expect((await api('overview')).body.byStatus.pending).toBe(1);
      await page.close();
    } finally {
      await board.close();
    }
  });

  it('counts every open task and the tasks finished in the last day, however long the history', async () => {
    const me = await own.newAgent('counter');
    const friend = await own.newAgent('counted');
    const done = [];
    for (const title of ['Done today', 'Done long ago']) {
      done.push(await me.client.handoff({ to: friend.id, title, allowOffline: true }));
      const [claimed] = await friend.client.claimNext({ start: true, limit: 1 });
      await friend.client.complete(claimed!.id, claimed!.claim_token!, { status: 'success' });
    }
    const waiting = await me.client.handoff({ to: friend.id, title: 'Still open', allowOffline: true });
    // One of them finished two days ago, as a long history has them: moved back past the triggers.
    const db = new pg.Client({ connectionString: own.adminUrl });
    await db.connect();
    try {
      await db.query('set session_replication_role = replica');
      await db.query(`update task_handoffs set completed_at = now() - interval '2 days' where id = $1`, [done[1]!.id]);
    } finally {
      await db.end();
    }
    const board = await startBoard({ data: new BoardData({ kind: 'agent', client: me.client }), log: silentLogger });
    try {
      const page = await open(board, '#/');
      await page.locator('.count[data-status="completed"]').waitFor();
      expect(await page.locator('.count[data-status="pending"]').textContent()).toBe('1');
      expect(await page.locator('.count[data-status="completed"]').textContent()).toBe('1');
      await expect.poll(() => page.getByText('Finished in the last 24 hours').count()).toBe(1);
      const overview = await page.evaluate(() => fetch('/api/overview').then((r) => r.json()));
      expect(Date.now() - Date.parse(overview.finishedSince)).toBeGreaterThan(23 * 3_600_000);
      expect(await page.locator('.bars-axis').textContent()).toBe('60 min ago30 min agonow');
      expect(waiting.status).toBe('pending');
      // The live feed: what moves while the page is open, newest first, each a link to its task.
      expect(await page.locator('.feed').count()).toBe(0);
      const [claimed] = await friend.client.claimNext({ start: true, limit: 1 });
      expect(claimed!.id).toBe(waiting.id);
      const moved = page.locator(`.feed [data-feed-task="${waiting.id}"]`).first();
      await moved.waitFor();
      expect(await moved.locator('.badge').textContent()).toMatch(/claimed|in progress/);
      expect(await moved.locator('a').getAttribute('href')).toBe(`#/task/${waiting.id}`);
      await shoot(page, 'overview-agent');
      await page.close();

      // The task list: a capability reads as one, and a task waiting on another says so.
      const offered = await me.client.broadcast({ title: 'For any coder', requiredCapabilities: ['board-code'] });
      const after = await me.client.handoff({ to: friend.id, title: 'After the open one', dependsOn: [waiting.id], allowOffline: true });
      const list = await open(board, '#/tasks');
      const offeredRow = list.locator(`tr[data-task="${offered.id}"]`);
      await offeredRow.waitFor();
      expect(await offeredRow.locator('.recipient').textContent()).toBe('any agent with board-code');
      expect(await offeredRow.locator('.recipient .chip').textContent()).toBe('board-code');
      expect(await list.locator(`tr[data-task="${after.id}"] .waiting`).textContent()).toBe(' waiting on 1');
      await list.close();
    } finally {
      await board.close();
    }
  });

  it('answers a question as the sender, and pauses a schedule as the operator', async () => {
    const sender = await own.newAgent('asker');
    const worker = await own.newAgent('helper');
    const task = await sender.client.handoff({ to: worker.id, title: 'Needs a detail', allowOffline: true });
    const [claimed] = await worker.client.claimNext({ start: true });
    await worker.client.ask(task.id, 'Which colour?');
    const board = await startBoard({ data: new BoardData({ kind: 'agent', client: sender.client }), log: silentLogger });
    try {
      const page = await open(board, `#/task/${task.id}`);
      await page.getByLabel('Answer the question').fill('Blue');
      await page.getByRole('button', { name: 'Send answer' }).click();
      await eventually(async () => (await sender.client.getTask(task.id)).status === 'in_progress', 20_000, 'the answer to resume the task');
      expect((await worker.client.messages({ taskId: task.id, kind: 'answer' })).map((m) => (m.body as { text: string }).text)).toEqual(['Blue']);
      expect(claimed!.id).toBe(task.id);
      await page.close();
    } finally {
      await board.close();
    }

    const name = `nightly-${sender.id}`;
    await own.admin.createSchedule({ name, schedule: '0 6 * * *', from: sender.id, to: worker.id, template: { title: 'Nightly' } });
    const page = await open(operator, '#/schedules');
    const row = page.locator(`tr[data-schedule="${name}"]`);
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByRole('button', { name: 'Resume' }).waitFor();
    expect((await own.admin.listSchedules()).find((s) => s.name === name)).toMatchObject({ enabled: false });
    await shoot(page, 'schedules');
    await page.close();
  });

  it('shows what a task\'s runs spent, by attempt and model, and what everything under it spent, to the operator and to the sender', async () => {
    const [lead, worker] = await Promise.all([own.newAgent('spend-lead'), own.newAgent('spend-worker')]);
    const root = await lead.client.handoff({ to: worker.id, title: 'Spend some tokens', allowOffline: true, budget: { tokens: 1600 } });
    const held = await worker.client.claim(root.id, { start: true });
    await worker.client.recordUsage(root.id, held.claim_token, { runtime: 'claude', model: 'claude-sonnet-4-5', inputTokens: 1000, outputTokens: 200, cachedTokens: 50, turns: 3, costUsd: 0.5 });
    await worker.client.recordUsage(root.id, held.claim_token, { runtime: 'claude', model: 'claude-haiku-4-5', inputTokens: 10, outputTokens: 2, turns: 1, costUsd: 0.001 });
    const child = await worker.client.handoff({ to: worker.id, title: 'Spend some more', parentTaskId: root.id, allowOffline: true });
    await worker.client.complete(root.id, held.claim_token, { status: 'success', summary: 'spent' });
    const childHeld = await worker.client.claim(child.id, { start: true });
    await worker.client.recordUsage(child.id, childHeld.claim_token, { runtime: 'codex', model: 'gpt-5.1-codex', inputTokens: 300, outputTokens: 30, cachedTokens: 3, turns: 1 });
    for (const board of [operator, await startBoard({ data: new BoardData({ kind: 'agent', client: lead.client }), log: silentLogger })]) {
      const page = await open(board, `#/task/${root.id}`);
      await page.locator('tr[data-usage="claude-sonnet-4-5"]').waitFor();
      await page.locator('tr[data-chain-usage]').first().waitFor();
      expect(await page.locator('tr[data-usage="claude-sonnet-4-5"]').textContent()).toMatch(/^1claudeclaude-sonnet-4-51,00020050 ?3\$0\.50$/);
      expect(await page.locator('tr[data-chain-usage]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-chain-usage')))).toEqual(['claude-haiku-4-5', 'claude-sonnet-4-5', 'gpt-5.1-codex']);
      expect(await page.locator('tr[data-chain-usage="gpt-5.1-codex"]').textContent()).toBe('gpt-5.1-codex1300303—');
      // The chain's budget against what the root and its child spent (1,262 and 333 tokens).
      expect(await page.locator('p[data-budget]').getAttribute('data-budget')).toBe('left');
      expect(await page.locator('p[data-budget]').textContent()).toMatch(/^Budget \(set on .*, asks its sender when spent\): 1,595 of 1,600 tokens spent; left: 5 tokens\.$/);
      await page.close();
      // Spend by agent and by model over the last days (the operator sees every run; the lead, those of tasks it may see).
      if (board !== operator) {
        await board.close();
        continue;
      }
      const spend = await open(board, '#/spend');
      await spend.locator(`tr[data-spend-agent="${worker.id}"]`).waitFor();
      expect(await spend.locator(`tr[data-spend-agent="${worker.id}"]`).textContent()).toBe(`${worker.id}31,595$0.501`);
      expect(await spend.locator('tr[data-spend-model="gpt-5.1-codex"]').textContent()).toBe('gpt-5.1-codex1333—');
      await spend.close();
    }
  });

  it('has no accessibility violations on any view, light or dark, wide or on a phone, fits a phone\'s width, and logs no console errors', async () => {
    // A task of its own for the task view: a long title, a question waiting, an agent's long status line.
    const [asker, sender] = await Promise.all([own.newAgent('shots-worker', { capabilities: ['review'] }), own.newAgent('shots-lead')]);
    const task = await sender.client.handoff({ to: asker.id, title: `Review the parser's error recovery on inputs that end mid-token, ${'and more '.repeat(8)}`, allowOffline: true, payload: { files: ['src/parser.ts', 'src/lexer.ts'] } });
    const claimed = await asker.client.claim(task.id);
    await asker.client.start(task.id, claimed.claim_token!);
    await asker.client.recordUsage(task.id, claimed.claim_token, { runtime: 'claude', model: 'claude-sonnet-4-5', inputTokens: 1234, outputTokens: 56, cachedTokens: 7, turns: 2, costUsd: 0.0123, sessionId: 'a-session' });
    await asker.client.ask(task.id, 'Should a missing closing brace be reported once per file or once per block?');
    const views = ['#/', '#/agents', '#/tasks', `#/task/${task.id}`, '#/dead-letters', '#/schedules', '#/spend'];
    const name = (view: string) => (view === '#/' ? 'overview' : view.startsWith('#/task/') ? 'task-view' : view.slice(2));
    const page = await open(operator);
    for (const [size, viewport] of [['wide', { width: 1280, height: 900 }], ['phone', { width: 390, height: 844 }]] as const) {
      await page.setViewportSize(viewport);
      for (const scheme of ['light', 'dark'] as const) {
        await page.evaluate((s) => localStorage.setItem('baton-theme', s), scheme);
        for (const view of views) {
          await page.goto(`${operator.origin}/${view}`);
          await page.reload();
          await page.locator('main h2, main .cards, #task-title').first().waitFor();
          await page.waitForLoadState('networkidle').catch(() => undefined);
          // The page's CSP allows no inline script; axe is evaluated through the DevTools protocol instead.
          await page.evaluate(axe.source);
          const violations = await page.evaluate(async () => {
            const result = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] });
            return result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
          });
          expect(violations, `${view} in ${scheme}, ${size}`).toEqual([]);
          // Nothing makes the page itself scroll sideways (a wide table scrolls in its own box).
          expect(await page.evaluate(() => document.documentElement.scrollWidth), `${view} in ${scheme}, ${size}`).toBeLessThanOrEqual(viewport.width);
          await shoot(page, `${name(view)}-${scheme}-${size}`);
        }
      }
    }
    expect(errorsOf.get(page)).toEqual([]);
    await page.close();
  }, 240_000);
});
