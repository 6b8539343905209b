/** Every task command of the built CLI, spawned as a process, in both output modes, with its exit codes. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Message, Task, TaskEvent } from '../src/schemas.js';
import { cliAs, parsed } from './cli.js';
import { database, newAgent, stack } from './helpers.js';

const db = database();
const oneLine = (text: string) => text.trim().split('\n').length === 1;

describe('baton task commands', async () => {
  const alice = await newAgent('alice');
  const coder = await newAgent('coder', { capabilities: ['code', 'review'] });
  const rev = await newAgent('rev', { capabilities: ['review'] });
  const asAlice = cliAs(alice.token, stack);
  const asCoder = cliAs(coder.token, stack);
  const asRev = cliAs(rev.token, stack);
  await Promise.all([asCoder('status', 'ready'), asRev('status', 'reviewing')]);

  const handoff = async (...extra: string[]) => Task.parse(parsed(await asAlice('handoff', coder.id, 'a task', '--json', ...extra)));

  it('hands off, printing one line or the task as JSON', async () => {
    const text = await asAlice('handoff', coder.id, 'Write slugify', '--priority', 'high');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^Handed off [0-9a-f]{8} "Write slugify" \(high\) — pending, from alice-\w+ to coder-\w+\n$/);
    expect(text.stdout).not.toMatch(/\x1b\[/);

    const file = path.join(os.tmpdir(), `payload-${process.pid}.json`);
    fs.writeFileSync(file, JSON.stringify({ spec: 'from a file', n: 2 }));
    const task = await handoff('--payload', `@${file}`, '--deadline', '+2h', '--max-attempts', '5', '-d', 'details');
    fs.rmSync(file);
    expect(task).toMatchObject({ from_agent: alice.id, to_agent: coder.id, payload: { spec: 'from a file', n: 2 }, max_attempts: 5, description: 'details' });
    expect(Date.parse(task.deadline!) - Date.now()).toBeGreaterThan(7000_000);
  });

  it('returns the first task for a repeated idempotency key', async () => {
    const key = `key-${Date.now()}`;
    const first = await handoff('--idempotency-key', key);
    const again = await handoff('--idempotency-key', key);
    expect(again.id).toBe(first.id);
  });

  it('refuses an unknown addressee with exit 1, and an offline one only when told to', async () => {
    const unknown = await asAlice('handoff', 'nobody-xyz', 'lost');
    expect(unknown.code).toBe(1);
    expect(oneLine(unknown.stderr)).toBe(true);
    expect(unknown.stderr).toMatch(/no agent named "nobody-xyz".*baton discover --all/);

    const sleeper = await newAgent('sleeper');
    const offline = await asCoder('handoff', sleeper.id, 'while you sleep', '--online-only');
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/is offline/);
    const queued = await asCoder('handoff', sleeper.id, 'while you sleep');
    expect(queued.code).toBe(0);
    expect(queued.stdout).toContain(`${sleeper.id} is offline; the task waits until it comes back; refuse instead of queueing with --online-only`);
    expect((await asCoder('handoff', sleeper.id, 'while you sleep', '--allow-offline')).code).toBe(0);
  });

  it('refuses malformed options with exit 2 and a one-line error', async () => {
    for (const args of [
      ['handoff', coder.id, 'x', '--payload', '{not json'],
      ['handoff', coder.id, 'x', '--priority', 'asap'],
      ['handoff', coder.id, 'x', '--deadline', 'tomorrowish'],
      ['handoff', coder.id],
      ['tasks', '--status', 'done'],
    ]) {
      const result = await asAlice(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(oneLine(result.stderr), result.stderr).toBe(true);
    }
  });

  it('refuses bad input the database judges with exit 1', async () => {
    const empty = await asAlice('handoff', coder.id, '   ');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/needs a title/);
    const array = await asAlice('handoff', coder.id, 'x', '--payload', '[1,2]');
    expect(array.code).toBe(1);
    // In the database's words, not the validator's.
    expect(array.stderr).toMatch(/payload: must be a JSON object, not an array: wrap the value/);
  });

  it('broadcasts to every capable agent', async () => {
    const task = Task.parse(parsed(await asAlice('broadcast', 'Review PR 7', '--capability', 'review', '--json')));
    expect(task).toMatchObject({ to_agent: null, required_capabilities: ['review'] });
    const text = await asAlice('broadcast', 'Review PR 8', '-c', 'review');
    expect(text.stdout).toMatch(/^Broadcast .* to any\[review\]/);
  });

  it('lists the inbox, sent and claimable tasks', async () => {
    const task = await handoff();
    const mine = z.array(Task).parse(parsed(await asCoder('tasks', '--json')));
    expect(mine.map((t) => t.id)).toContain(task.id);
    expect(mine.every((t) => ['pending', 'claimed', 'in_progress', 'input_required'].includes(t.status))).toBe(true);
    const priorities = mine.map((t) => ['low', 'medium', 'high', 'urgent'].indexOf(t.priority));
    expect(priorities).toEqual([...priorities].sort((a, b) => b - a));
    expect(z.array(Task).parse(parsed(await asAlice('tasks', '--sent', '--json'))).every((t) => t.from_agent === alice.id)).toBe(true);
    expect(z.array(Task).parse(parsed(await asRev('tasks', '--pending', '--json'))).every((t) => t.to_agent === null)).toBe(true);
    const table = await asCoder('tasks');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+PRIORITY\s+FROM\s+TO\s+HOLDER\s+AGE\s+TITLE$/);
    expect(table.stdout).toContain(task.id.slice(0, 8));
    expect((await asRev('tasks', '--status', 'completed')).stdout.trim()).toBe('No tasks.');
  });

  it('claims by id prefix and starts, or stops at claimed with --no-start', async () => {
    const task = await handoff();
    const claimed = Task.parse(parsed(await asCoder('claim', task.id.slice(0, 8), '--no-start', '--json')));
    expect(claimed).toMatchObject({ id: task.id, status: 'claimed', claimed_by: coder.id });
    const started = await asCoder('start', task.id.slice(0, 6));
    expect(started.stdout).toMatch(/^Started .* in_progress/);
    const again = await asRev('claim', task.id);
    expect(again.code).toBe(1);
  });

  it('claims the next task, and says plainly when there is none', async () => {
    const worker = await newAgent('nexter', { capabilities: ['rare-skill'] });
    const asWorker = cliAs(worker.token, stack);
    const none = await asWorker('claim', '--next');
    expect(none).toMatchObject({ code: 0, stdout: 'Nothing to claim right now.\n' });
    expect(parsed(await asWorker('claim', '--next', '--json'))).toEqual([]);
    const empty = await asWorker('claim', '--next', '--fail-if-empty');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/nothing was claimable/);
    await asAlice('broadcast', 'rare job', '-c', 'rare-skill', '-p', 'urgent');
    const got = z.array(Task).parse(parsed(await asWorker('claim', '--next', '--capability', 'rare-skill', '--json')));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ status: 'in_progress', claimed_by: worker.id, title: 'rare job' });
    expect((await asWorker('claim')).code).toBe(2);
    const tooMany = await asWorker('claim', '--next', '--limit', '5000');
    expect(tooMany.code).toBe(1);
    expect(tooMany.stderr).toMatch(/between 1 and 1000/);
    expect((await asWorker('claim', got[0]!.id, '--next')).code).toBe(2);
  });

  it('applies the prefix rules: 6 characters at least, ambiguity listed, unknown refused', async () => {
    const shared = crypto.randomUUID().slice(0, 6);
    const ids = [`${shared}01-0000-4000-8000-000000000001`, `${shared}02-0000-4000-8000-000000000002`];
    for (const id of ids) {
      await db.query(`insert into task_handoffs (id, from_agent, to_agent, title) values ($1, $2, $3, 'prefix probe')`, [id, alice.id, coder.id]);
    }
    const ambiguous = await asAlice('show', shared);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain(ids[0]!.slice(0, 13));
    expect(ambiguous.stderr).toContain(ids[1]!.slice(0, 13));
    expect(Task.parse(parsed(await asAlice('show', ids[1]!.slice(0, 8), '--json')).task).id).toBe(ids[1]);
    expect((await asAlice('show', ids[0]!.slice(0, 5))).stderr).toMatch(/too short.*at least 6/);
    expect((await asAlice('show', 'zzzzzzzz')).code).toBe(2);
    const unknown = await asAlice('show', 'ffffff99');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no task starting with ffffff99/);
    expect((await cliAs(rev.token, stack)('show', ids[0]!)).code).toBe(1);
  });

  it('reports progress, asks and answers, and completes with a structured result', async () => {
    const task = await handoff();
    await asCoder('claim', task.id);
    const progress = Task.parse(parsed(await asCoder('progress', task.id, 'halfway', '--percent', '50', '--json')));
    expect(progress).toMatchObject({ progress_message: 'halfway', progress_percent: 50 });
    expect((await asAlice('show', task.id)).stdout).toMatch(/^progress\s+50% halfway$/m);
    await asCoder('progress', task.id, 'no number this time');
    expect((await asAlice('show', task.id)).stdout).toMatch(/^progress\s+no number this time$/m);
    expect((await asCoder('progress', task.id, 'too far', '--percent', '150')).code).toBe(1);
    expect(Task.parse(parsed(await asCoder('ask', task.id, 'ASCII only?', '--json'))).status).toBe('input_required');
    expect((await asRev('answer', task.id, 'yes')).code).toBe(1);
    expect(Task.parse(parsed(await asAlice('answer', task.id, 'yes', '--json'))).status).toBe('in_progress');

    const badShape = await asCoder('complete', task.id, '--result', '{"status": "great"}');
    expect(badShape.code).toBe(1);
    expect(badShape.stderr).toMatch(/result.status must be/);
    const byOther = await asAlice('complete', task.id, '--summary', 'mine now');
    expect(byOther.code).toBe(1);
    const done = Task.parse(parsed(await asCoder('complete', task.id, '--summary', 'done', '--result', '{"metrics": {"tests": 3}, "artifacts": [{"name": "a.ts", "path": "src/a.ts"}]}', '--json')));
    expect(done).toMatchObject({ status: 'completed', result: { status: 'success', summary: 'done', metrics: { tests: 3 } } });

    const shown = parsed(await asAlice('show', task.id.slice(0, 7), '--json'));
    expect(z.array(TaskEvent).parse(shown.events).map((e) => e.to_status))
      .toEqual(['pending', 'in_progress', 'input_required', 'in_progress', 'completed']);
    expect(z.array(Message).parse(shown.messages).map((m) => m.kind)).toEqual(['progress', 'progress', 'question', 'answer', 'result']);
    const text = (await asAlice('show', task.id)).stdout;
    expect(text).toMatch(/^id\s+[0-9a-f-]{36}$/m);
    expect(text).toContain('History');
    expect(text).toMatch(/input_required → in_progress\s+alice-\w+\s+answered/);
    expect(text).toMatch(/^progress\s+-$/m); // a completed task's last progress is no longer news
  });

  it('fails with or without a retry, rejects, cancels, releases and reassigns', async () => {
    const retried = await handoff('--max-attempts', '2');
    await asCoder('claim', retried.id);
    const backingOff = Task.parse(parsed(await asCoder('fail', retried.id, 'flaky', '--retry', '--json')));
    expect(backingOff.status).toBe('pending');
    expect(Date.parse(backingOff.not_before!)).toBeGreaterThan(Date.parse(backingOff.updated_at));
    // The backoff is seconds long; a claim on a loaded machine may come after it. Made an hour here.
    await db.query(`update task_handoffs set not_before = now() + interval '1 hour' where id = $1`, [retried.id]);
    const early = await asCoder('claim', retried.id);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/is backing off after a failure until .* — Claim it again in \d+ s\./);
    await db.query('update task_handoffs set not_before = null where id = $1', [retried.id]);
    await asCoder('claim', retried.id);
    expect(Task.parse(parsed(await asCoder('fail', retried.id, 'broken', '--json')))).toMatchObject({ status: 'failed', status_reason: 'broken' });

    const unwanted = await handoff();
    expect((await asRev('reject', unwanted.id, 'not mine')).code).toBe(1);
    expect((await asCoder('reject', unwanted.id, 'too busy')).stdout).toMatch(/^Rejected .* rejected/);

    const dropped = await handoff();
    expect((await asCoder('cancel', dropped.id)).code).toBe(1);
    expect(Task.parse(parsed(await asAlice('cancel', dropped.id, '--reason', 'moot', '--json')))).toMatchObject({ status: 'cancelled', status_reason: 'moot' });
    const cancelledAgain = await asAlice('cancel', dropped.id);
    expect(cancelledAgain.code).toBe(1);
    expect(cancelledAgain.stderr).toMatch(/already cancelled/);

    const handed = await handoff();
    await asCoder('claim', handed.id);
    expect(Task.parse(parsed(await asCoder('release', handed.id, '--json')))).toMatchObject({ status: 'pending', claimed_by: null });
    await asCoder('claim', handed.id);
    expect((await asCoder('reassign', handed.id, rev.id)).code).toBe(1);
    const moved = Task.parse(parsed(await asAlice('reassign', handed.id, rev.id, '--reason', 'coder is busy', '--json')));
    expect(moved).toMatchObject({ status: 'pending', to_agent: rev.id, claimed_by: null });
    const events = z.array(TaskEvent).parse(parsed(await asAlice('show', handed.id, '--json')).events);
    expect(events.at(-1)!.note).toBe(`reassigned from ${coder.id} to ${rev.id}: coder is busy`);
    const pendingMove = Task.parse(parsed(await asAlice('reassign', handed.id, coder.id, '--json')));
    expect(pendingMove.to_agent).toBe(coder.id);
  });

  it('needs an agent token, and says how to get one', async () => {
    const noToken = await cliAs(undefined, stack)('tasks');
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/BATON_AGENT_TOKEN is not set.*baton agent create/);
    const json = await cliAs(undefined, stack)('tasks', '--json');
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { message: expect.stringContaining('BATON_AGENT_TOKEN') } });
  });
});
