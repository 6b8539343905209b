/**
 * A client newer than its database: the answer lacks a column this client reads, or a function it
 * calls is missing (the migrations that add them not applied yet). The call fails with one error that
 * names what is missing and says what to do, not with a dump of every field's parse issue or a guess at
 * another function. A stack of its own, since its schema is taken back a step.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { BoardData } from '../src/board/data.js';
import { startBoard } from '../src/board/server.js';
import { UnreadableAnswerError, type BatonError } from '../src/errors.js';
import { silentLogger } from '../src/logger.js';
import { cliAs } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { ownStack } from './own-stack.js';

const own = ownStack('skew');

describe('a database older than the client', () => {
  it('answers with an error that names what is missing and says to migrate', async () => {
    const sender = await own.newAgent('skew-sender');
    const task = await sender.client.handoff({ to: sender.id, title: 'read back', payload: { n: 1 } });
    expect((await sender.client.getTask(task.id)).title).toBe('read back');

    // As before the migration that added trace context to tasks.
    const db = new pg.Client({ connectionString: own.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query('alter table public.task_handoffs drop column tracestate cascade');
      await db.query('drop function public.report_progress');
      await db.query("notify pgrst, 'reload schema'");
    } finally {
      await db.end();
    }

    // PostgREST answers the new shape once it has reloaded its schema cache.
    const error = await eventually(() => sender.client.getTask(task.id).then(() => undefined, (err: unknown) => {
      if (err instanceof UnreadableAnswerError) return err;
      throw err;
    }), 30_000, 'the answer without tracestate');
    expect(error).toBeInstanceOf(UnreadableAnswerError);
    expect(error).toMatchObject({ code: 'ANSWER' });
    expect(error.message).toMatch(/^the answer to task_handoffs is not what this client reads \(tracestate: /);
    expect(error.hint).toMatch(/migrations/);

    const shown = await cliAs(sender.token, own.env)('show', task.id);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('the answer to task_handoffs is not what this client reads (tracestate: ');
    expect(shown.stderr).toContain('npx supabase db push');
    expect(shown.stderr.split('\n').filter(Boolean).length).toBeLessThanOrEqual(3);

    // A function the client calls and the database lacks: PostgREST's message, and what to do (not
    // PostgREST's guess at a function of a similar name).
    const missing = await sender.client.progress(task.id, 'half way').then(() => undefined, (err: unknown) => err);
    expect(missing).toMatchObject({ code: 'PGRST202', message: expect.stringContaining('public.report_progress') });
    expect((missing as BatonError).hint).toMatch(/^The database's schema and this client are of different versions/);

    // The board says its upstream is at fault (502), not that the viewer asked wrongly.
    const board = await startBoard({ data: new BoardData({ kind: 'agent', client: sender.client }), log: silentLogger });
    try {
      const signIn = await fetch(board.url, { redirect: 'manual' });
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const answer = await fetch(`${board.origin}/api/tasks/${task.id}`, { headers: { cookie } });
      expect(answer.status).toBe(502);
      expect(await answer.json()).toMatchObject({ code: 'ANSWER', message: expect.stringContaining('tracestate') });
    } finally {
      await board.close();
    }
  });
});
