/**
 * Nothing one agent sends can hurt another agent, the stack or the record: each hole an outside attack
 * found, closed and proven here against the real stack.
 */
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { cliAs } from './cli.js';
import { database, newAgent, refusal, runningTask, stack, uniqueId } from './helpers.js';

const db = database();
const deep = (levels: number): unknown => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`);

/** Stores a row as an attacker with a broken client might have, bypassing Baton's triggers. */
async function plant(sql: string, params: unknown[]): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('begin');
    await client.query("set local session_replication_role = 'replica'");
    await client.query(sql, params);
    await client.query('commit');
  } finally {
    client.release();
  }
}

describe('poison JSON', () => {
  it('is refused wherever JSON is stored, with a clear error', async () => {
    const sender = await newAgent('poisoner');
    const target = await newAgent('target');
    await refusal(sender.client.handoff({ to: target.id, title: 'deep', payload: deep(2000) as Record<string, unknown> }), 'BT005');
    const err = await refusal(sender.client.send({ to: null, body: deep(2000) }), 'BT005');
    expect(err.message).toMatch(/the message body nests deeper than 32 levels/);
    await refusal(sender.client.updateProfile({ skillsOffered: deep(40) }), 'BT005');
    const task = await runningTask(sender, target);
    await refusal(target.client.complete(task.id, task.claim_token, { status: 'success', metrics: deep(40) as Record<string, unknown> }), 'BT005');
    await refusal(target.client.fail(task.id, task.claim_token, 'x', { problems: Array.from({ length: 101 }, () => ({ path: '', message: 'x' })) }), 'BT005');
    const wide = Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`k${i}`, i]));
    await refusal(sender.client.handoff({ to: target.id, title: 'wide', payload: wide }), 'BT005');
    // Within the limits, deep enough and wide enough for real work.
    await sender.client.handoff({ to: target.id, title: 'fine', payload: { nested: deep(20), embedding: Array.from({ length: 3072 }, () => 0.5) } });
  });

  it('stored before the limits existed, breaks no reader, and a bad row never strands its batch', async () => {
    const sender = await newAgent('old-sender');
    const reader = await newAgent('reader', { maxConcurrent: 5 });
    const poison = await sender.client.handoff({ to: reader.id, title: 'poison', priority: 'urgent' });
    const innocent = await sender.client.handoff({ to: reader.id, title: 'innocent' });
    await plant('update task_handoffs set payload = $1 where id = $2', [JSON.stringify(deep(2000)), poison.id]);
    const run = cliAs(reader.token, stack);
    expect((await run('tasks')).stdout).toContain('poison');
    expect((await run('show', poison.id.slice(0, 8))).code).toBe(0);

    const unreadable = await sender.client.handoff({ to: reader.id, title: 'unreadable', priority: 'high' });
    await plant(`update task_handoffs set expected_outputs = '[{"nom": 1}]' where id = $1`, [unreadable.id]);
    const claimed = await reader.client.claimNext({ limit: 5, start: true });
    expect(claimed.map((t) => t.title).sort()).toEqual(['innocent', 'poison']);
    const [row] = (await db.query('select status, status_reason from task_handoffs where id = $1', [unreadable.id])).rows;
    expect(row.status).toBe('failed');
    expect(row.status_reason).toMatch(/could not read the task: expected_outputs.0.name/);
  });
});

describe('the gateway', () => {
  const host = new URL(stack.SUPABASE_URL);

  /** Opens `count` connections that send headers and part of a large body, and leave it hanging. */
  async function halfSent(count: number, head: string): Promise<net.Socket[]> {
    return Promise.all(Array.from({ length: count }, () => new Promise<net.Socket>((resolve) => {
      const socket = net.connect(Number(host.port), host.hostname, () => {
        socket.write(`${head}Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"p_title": "`);
        resolve(socket);
      });
      socket.on('error', () => undefined);
    })));
  }

  /** The API still answers a request (within a generous deadline: it is not stalled). */
  const stillAnswers = async () => {
    const res = await fetch(`${stack.SUPABASE_URL}/rest/v1/task_status_transitions?limit=1`,
      { headers: { apikey: stack.SUPABASE_SERVICE_ROLE_KEY }, signal: AbortSignal.timeout(60_000) });
    expect(res.status).toBe(200);
  };

  it('is not stalled by half-sent keyless or preflight uploads', async () => {
    const sockets = [
      ...await halfSent(40, `POST /rest/v1/rpc/handoff_task HTTP/1.1\r\nHost: x\r\n`),
      ...await halfSent(40, `OPTIONS /rest/v1/rpc/handoff_task HTTP/1.1\r\nHost: x\r\n`),
    ];
    try {
      await stillAnswers();
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it('keeps answering when callers go away mid-upload', async () => {
    const agent = await newAgent('leaver');
    const sockets = await halfSent(80, `POST /rest/v1/rpc/handoff_task HTTP/1.1\r\nHost: x\r\napikey: ${stack.SUPABASE_ANON_KEY}\r\nAuthorization: Bearer ${agent.token}\r\n`);
    for (const s of sockets) s.destroy();
    await stillAnswers();
  });

  it('passes a long but valid query, and refuses an oversized body with 413', async () => {
    const agent = await newAgent('long-query');
    const ids = Array.from({ length: 1000 }, () => crypto.randomUUID());
    const res = await fetch(`${stack.SUPABASE_URL}/rest/v1/task_handoffs?select=id&id=in.(${ids.join(',')})`, {
      headers: { apikey: stack.SUPABASE_ANON_KEY, authorization: `Bearer ${agent.token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    // The body is declared at 9 MiB and only begun: the gateway refuses it by its length, before reading it.
    const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${stack.SUPABASE_URL}/rest/v1/rpc/fail_task`, {
        method: 'POST',
        headers: { apikey: stack.SUPABASE_ANON_KEY, authorization: `Bearer ${agent.token}`, 'content-type': 'application/json', 'content-length': 9 * 1024 * 1024 },
      }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => { body += chunk; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write('{"p_error": "');
    });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toMatchObject({ message: expect.stringContaining('larger than') });
  });
});

describe('one lock order', () => {
  it('lets a sender claim in a loop while the holder reports progress, completes and is reassigned: no 5xx, no deadlock', async () => {
    const sender = await newAgent('looper', { maxConcurrent: 50 });
    const holder = await newAgent('holder', { maxConcurrent: 50 });
    const other = await newAgent('other', { maxConcurrent: 50 });
    const tasks = await Promise.all(Array.from({ length: 12 }, (_, i) => runningTask(sender, holder, `contended ${i}`)));
    const serverErrors: string[] = [];
    const succeeded = [0, 0, 0, 0];
    const record = (err: unknown) => {
      const code = (err as { code?: string }).code ?? '';
      if (!/^(BT\d{3}|42501)$/.test(code)) serverErrors.push(`${code}: ${(err as Error).message}`);
    };
    const until = Date.now() + 3000;
    const loop = async (step: (i: number) => Promise<unknown>, n: number) => {
      for (let i = 0; Date.now() < until; i += 1) await step(i).then(() => { succeeded[n]! += 1; }, record);
    };
    await Promise.all([
      loop((i) => sender.client.claim(tasks[i % tasks.length]!.id), 0),
      loop((i) => holder.client.progress(tasks[i % tasks.length]!.id, `step ${i}`), 1),
      loop((i) => sender.client.handoff({ to: holder.id, title: `more ${i}` }), 2),
      loop(async (i) => {
        const t = tasks[i % tasks.length]!;
        if (i % 3 === 0) await sender.client.reassign(t.id, other.id, 'rebalance');
        else await holder.client.complete(t.id, t.claim_token);
      }, 3),
    ]);
    expect(serverErrors).toEqual([]);
    // The hand-offs always go through; progress and reassignments while tasks are still held do too.
    // (Claims of tasks already held, and completions of reassigned ones, are refused by design.)
    expect(succeeded[2], 'hand-offs that went through').toBeGreaterThan(0);
    expect(succeeded[1]! + succeeded[3]!, 'progress reports and reassignments or completions that went through').toBeGreaterThan(0);
  });
});

describe('chain visibility', () => {
  it('follows the caller\'s current rights: a holder moved off a task stops reading it through the child it planted', async () => {
    const boss = await newAgent('boss');
    const first = await newAgent('first');
    const second = await newAgent('second');
    const parent = await runningTask(boss, first, 'parent work');
    await first.client.attachArtifact(parent.id, 'notes.md', 'first notes');
    const planted = await first.client.handoff({ to: second.id, title: 'planted', parentTaskId: parent.id, inputArtifacts: [{ task_id: parent.id, name: 'notes.md' }] });
    expect((await first.client.ancestors(planted.id)).map((t) => t.id)).toEqual([parent.id]);

    await boss.client.reassign(parent.id, second.id, 'moving it');
    const taken = await second.client.claim(parent.id, { start: true });
    await second.client.attachArtifact(parent.id, 'notes.md', 'second notes, private');
    await second.client.complete(parent.id, taken.claim_token, { status: 'success', summary: 'the secret result' });

    // first still sent the child, but no longer works on the parent: it reads nothing of it through the child.
    expect(await first.client.ancestors(planted.id)).toEqual([]);
    expect(await first.client.inputs(planted.id)).toEqual([]);
    expect((await first.client.chain(planted.id)).map((r) => r.id)).toEqual([planted.id]);
    await refusal(first.client.getTask(parent.id), 'BT002');
    // Whoever works on the child keeps its context.
    expect((await second.client.ancestors(planted.id)).map((t) => t.id)).toEqual([parent.id]);
    expect((await second.client.inputs(planted.id)).map((a) => a.text())).toEqual(['second notes, private']);
  });
});

describe('the conversation', () => {
  it('is written by the database: an agent cannot forge a question, an answer, progress or a result', async () => {
    const sender = await newAgent('sender');
    const holder = await newAgent('holder');
    const bystander = await newAgent('bystander');
    const task = await runningTask(sender, holder);
    for (const kind of ['question', 'answer', 'progress', 'result'] as const) {
      await refusal(bystander.client.send({ to: sender.id, kind, body: { text: 'forged' } }), '42501');
      await refusal(holder.client.send({ to: sender.id, taskId: task.id, kind, body: { text: 'forged' } }), '42501');
    }
    await holder.client.ask(task.id, 'the real question');
    await sender.client.send({ to: holder.id, taskId: task.id, body: { text: 'a note, not a question' } });
    await sender.client.answer(task.id, 'the answer');
    const [question] = await holder.client.messages({ taskId: task.id, kind: 'question' });
    const [answer] = await holder.client.messages({ taskId: task.id, kind: 'answer' });
    expect(question).toMatchObject({ from_agent: holder.id, body: { text: 'the real question' } });
    expect(answer).toMatchObject({ from_agent: sender.id, reply_to_id: question!.id });
  });
});

describe('privileges', () => {
  it('let no API role execute an internal function, however it was added', async () => {
    const helpers = ['agent_capabilities', 'can_see_message', 'check_expected_outputs', 'check_json_shape', 'check_lease', 'check_request',
      'check_result', 'current_agent_id', 'is_artifact_name', 'is_online', 'is_slug', 'may_listen', 'settings'];
    const { rows } = await db.query(`
      select p.proname, has_function_privilege('anon', p.oid, 'execute') as anon, has_function_privilege('authenticated', p.oid, 'execute') as authed
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'baton_private'`);
    expect(rows.length).toBeGreaterThan(40);
    // Besides the helpers, exactly the RPCs behind public's entry points, which run as their caller.
    const { rows: entryPoints } = await db.query<{ proname: string }>(`
      select p.proname from pg_proc p
      where p.pronamespace = 'public'::regnamespace and has_function_privilege('authenticated', p.oid, 'execute')`);
    expect(entryPoints.length).toBeGreaterThan(20);
    const executable = rows.filter((r) => r.anon || r.authed).map((r) => r.proname).sort();
    expect(executable).toEqual([...helpers, ...entryPoints.map((r) => r.proname)].sort());
    expect(rows.filter((r) => r.anon && !helpers.includes(r.proname))).toEqual([]);

    const added = uniqueId('added').replace('-', '_');
    await db.query(`create function baton_private.${added}() returns int language sql as 'select 1'`);
    try {
      const [{ anon }] = (await db.query(`select has_function_privilege('anon', 'baton_private.${added}()'::regprocedure, 'execute') as anon`)).rows;
      expect(anon).toBe(false);
    } finally {
      await db.query(`drop function baton_private.${added}()`);
    }
    const { rows: rpcs } = await db.query(`
      select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'public' and has_function_privilege('anon', p.oid, 'execute')`);
    expect(rpcs).toEqual([]);
  });

  it('refuse a token Baton did not issue even without an agent_id', async () => {
    const plain = await new SignJWT({ role: 'authenticated', sub: crypto.randomUUID() }).setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(stack.SUPABASE_JWT_SECRET));
    const res = await fetch(`${stack.SUPABASE_URL}/rest/v1/task_handoffs`, { headers: { apikey: stack.SUPABASE_ANON_KEY, authorization: `Bearer ${plain}` } });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: '42501', message: expect.stringMatching(/token without an agent_id/) });
  });
});

describe('terminal output', () => {
  it('escapes control characters other agents wrote, even with NO_COLOR and no TTY', async () => {
    const attacker = await newAgent('attacker');
    const victim = await newAgent('victim');
    const evil = 'title\u001b]0;pwned\u0007\u001b[2J\r\u202eend';
    const task = await attacker.client.handoff({ to: victim.id, title: evil, description: 'desc\u001b[31mred' });
    await attacker.client.send({ to: victim.id, body: { text: 'hi\u001b[2J' } });
    await victim.client.heartbeat('status\u001b[5m');
    const run = cliAs(victim.token, stack);
    for (const args of [['tasks'], ['show', task.id], ['inbox'], ['discover', '--all'], ['protocol', 'tasks']]) {
      const { stdout, code } = await run(...args);
      expect(code).toBe(0);
      expect(stdout, args.join(' ')).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    }
    expect((await run('tasks')).stdout).toContain('title\\u001b]0;pwned\\u0007\\u001b[2J\\u000d\\u202eend');
  });
});

describe('bounded text and quotas', () => {
  it('keep what one call stores bounded', async () => {
    const sender = await newAgent('sender');
    const holder = await newAgent('holder');
    const task = await runningTask(sender, holder);
    const failed = await holder.client.fail(task.id, task.claim_token, 'e'.repeat(1024 * 1024));
    expect(failed.status_reason!.length).toBeLessThanOrEqual(4000);
    const [event] = (await db.query('select length(note) as n from task_events where task_id = $1 order by id desc limit 1', [task.id])).rows;
    expect(event.n).toBeLessThanOrEqual(2000);
  });

  it('refuse a runaway agent past its hand-offs and messages per minute, saying when to retry', async () => {
    const runaway = await newAgent('runaway');
    const sink = await newAgent('sink');
    const { rows: [settings] } = await db.query('select handoffs_per_minute, messages_per_minute from baton_settings');
    /** Sends in parallel chunks until the first refusal; returns how many got through and the refusal. */
    const until = async (quota: number, send: () => Promise<unknown>) => {
      let through = 0;
      for (;;) {
        const outcomes = await Promise.allSettled(Array.from({ length: 50 }, send));
        through += outcomes.filter((o) => o.status === 'fulfilled').length;
        const refused = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
        if (refused) return { through, err: refused.reason as Error & { code: string; hint: string } };
        // A clock minute may turn during the run; two minutes' worth is the most that can get through.
        if (through > 2 * quota) throw new Error(`no refusal after ${through} calls`);
      }
    };
    const handoffs = await until(settings.handoffs_per_minute, () => runaway.client.handoff({ to: sink.id, title: 'spam' }));
    expect(handoffs.through).toBeGreaterThanOrEqual(settings.handoffs_per_minute);
    expect(handoffs.err.code).toBe('BT013');
    expect(handoffs.err.name).toBe('QuotaError');
    expect(handoffs.err.message).toMatch(/reached its quota of \d+ hand-offs per minute/);
    expect(handoffs.err.hint).toMatch(/^Try again in \d+ s; an operator can raise baton_settings.handoffs_per_minute\.$/);
    // Other agents are not held back by it.
    await sink.client.handoff({ to: runaway.id, title: 'still fine' });

    const messages = await until(settings.messages_per_minute, () => runaway.client.send({ to: sink.id, body: { text: 'spam' } }));
    expect(messages.through).toBeGreaterThanOrEqual(settings.messages_per_minute);
    expect(messages.err.code).toBe('BT013');
  });

  it('bound a sender\'s open tasks, recounting them only when the bound is reached', async () => {
    const sender = await newAgent('counted');
    const worker = await newAgent('worker');
    const { open_tasks_per_sender: quota } = (await db.query('select open_tasks_per_sender from baton_settings')).rows[0];
    // The bound is the sum over the sender's slots (one per database connection).
    const counter = async () => (await db.query('select sum(open_tasks)::int as open_tasks from agent_usage where agent_id = $1', [sender.id])).rows[0]?.open_tasks;
    const setCounter = (open: number) => db.query(`update agent_usage set open_tasks = case when slot = (select min(slot) from agent_usage where agent_id = $1) then $2 else 0 end
      where agent_id = $1`, [sender.id, open]);
    const tasks = await Promise.all([1, 2, 3].map((i) => sender.client.handoff({ to: worker.id, title: `t${i}` })));
    expect(await counter()).toBe(3);
    await sender.client.cancel(tasks[0]!.id);
    const running = await worker.client.claim(tasks[1]!.id, { start: true });
    await worker.client.complete(running.id, running.claim_token);
    // Finishing does not touch the sender's counter (that serialized every agent finishing its work)...
    expect(await counter()).toBe(3);
    // ...and at the bound it is recounted: one task is really open, so the next hand-off goes through.
    await setCounter(quota);
    await sender.client.handoff({ to: worker.id, title: 't4' });
    expect(await counter()).toBe(2);
    await sender.client.handoffMany([{ to: worker.id, title: 't5' }]);
    expect(await counter()).toBe(3);
    // Really at the quota, it refuses, in one call and in a batch.
    await plant(`insert into task_handoffs (id, from_agent, to_agent, title, root_task_id)
                 select g.id, $1, $2, 'planted', g.id from (select gen_random_uuid() as id from generate_series(1, $3)) g`,
                [sender.id, worker.id, quota - 3]);
    await setCounter(quota);
    const err = await refusal(sender.client.handoff({ to: worker.id, title: 'one too many' }), 'BT013');
    expect(err.message).toMatch(/already has \d+ open tasks, its quota/);
    const [answer] = await sender.client.handoffMany([{ to: worker.id, title: 'one too many' }]);
    expect(answer?.code).toBe('BT013');
    expect(await counter()).toBe(quota);
  });
});
