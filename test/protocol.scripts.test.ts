/**
 * scripts/agentcomms/*.sh called exactly as the protocol document (shared/seeds/004_…) prints them, with
 * the meaning and one-line outputs it gives; and the protocol's raw REST calls, answered with a way forward.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ownStack } from './own-stack.js';
import { databaseNow, expectStampedBetween, uniqueId } from './helpers.js';

// A stack of its own: the protocol's broadcasts need no capability, and any daemon of another test
// file could claim them from the shared one.
const own = ownStack('protocol');
const newAgent = (prefix: string, options?: { capabilities?: string[] }) => own.newAgent(prefix, options);
const stack = { get SUPABASE_URL() { return own.env.SUPABASE_URL; }, get SUPABASE_ANON_KEY() { return own.env.SUPABASE_ANON_KEY; },
  get SUPABASE_SERVICE_ROLE_KEY() { return own.env.SUPABASE_SERVICE_ROLE_KEY; } };
const admin = { get db() { return own.admin.db; } };

const scripts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'agentcomms');

interface Ran { code: number; stdout: string; stderr: string }

/** Runs `<script>.sh args…` as the agent holding `token`, with the environment a bot would have. */
function script(token: string, name: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(path.join(scripts, `${name}.sh`), args, {
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1',
        SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: token, ...env,
      },
      timeout: 60_000,
    }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) || 1 : 0, stdout: stdout.trim(), stderr: stderr.trim() }));
  });
}

const idIn = (line: string) => /([0-9a-f-]{36})/.exec(line)![1]!;

describe('the protocol\'s scripts', () => {
  it('run the protocol\'s example flow with its meaning and outputs', async () => {
    const chhotu = await newAgent('chhotu', { capabilities: ['coding'] });
    const cheenu = await newAgent('cheenu', { capabilities: ['research', 'writing'] });
    await admin.db.from('agents').update({ comms_endpoint: 'discord' }).eq('id', cheenu.id);
    const as = (agent: { token: string }) => (name: string, ...args: string[]) => script(agent.token, name, args);
    await as(cheenu)('status', 'researching');

    // 1. Chhotu discovers Cheenu can do research
    const discovered = await as(chhotu)('discover');
    expect(discovered.code, discovered.stderr).toBe(0);
    expect(discovered.stdout.split('\n')).toContain(`${cheenu.id} - research, writing | discord`);
    expect((await as(chhotu)('discover', 'active')).stdout.split('\n')).toContain(`${cheenu.id} - research, writing | discord`);

    // 2. Chhotu hands off a task
    const handed = await as(chhotu)('handoff', cheenu.id, 'Research Supabase Realtime for live updates', 'high');
    expect(handed.stdout).toMatch(/^✅ Task handed off: [0-9a-f-]{36}$/);
    const id = idIn(handed.stdout);
    expect(await chhotu.client.getTask(id)).toMatchObject({ from_agent: chhotu.id, to_agent: cheenu.id, priority: 'high', status: 'pending' });

    // 3. Cheenu checks inbox (via heartbeat)
    expect((await as(cheenu)('tasks', '--mine')).stdout.split('\n')).toContain(`[pending] ${id} - Research Supabase Realtime for live updates`);

    // 4. Cheenu claims the task
    expect((await as(cheenu)('claim', id)).stdout).toBe(`✅ Claimed: ${id} - Research Supabase Realtime for live updates`);
    expect(await chhotu.client.getTask(id)).toMatchObject({ status: 'in_progress', claimed_by: cheenu.id });

    // 6. Cheenu completes with result
    expect((await as(cheenu)('complete', id, '{"findings": "Realtime works via..."}')).stdout).toBe(`✅ Completed: ${id}`);
    expect((await chhotu.client.getTask(id)).result).toEqual({ status: 'success', findings: 'Realtime works via...' });
  });

  it('take every call printed in the protocol, with the meaning the protocol gives it', async () => {
    const sender = await newAgent('chhotu');
    const cheenu = await newAgent('cheenu', { capabilities: ['research'] });
    const send = (name: string, ...args: string[]) => script(sender.token, name, args);
    const work = (name: string, ...args: string[]) => script(cheenu.token, name, args);

    const direct = await send('handoff', cheenu.id, 'Write unit tests for auth module', 'high');
    expect(await sender.client.getTask(idIn(direct.stdout))).toMatchObject({ to_agent: cheenu.id, priority: 'high', required_capabilities: [] });

    // The priority is a priority, not a capability: any agent can claim this broadcast.
    const broadcast = await send('broadcast', 'Research best practices for API rate limiting', 'medium');
    expect(broadcast.stdout).toMatch(/^✅ Task broadcast: /);
    expect(await sender.client.getTask(idIn(broadcast.stdout))).toMatchObject({ to_agent: null, priority: 'medium', required_capabilities: [] });

    const toReject = idIn((await send('handoff', cheenu.id, 'Rewrite everything in COBOL')).stdout);
    expect((await work('reject', toReject, 'Reason for rejection')).stdout).toBe(`✅ Rejected: ${toReject}`);
    expect(await sender.client.getTask(toReject)).toMatchObject({ status: 'rejected', status_reason: 'Reason for rejection' });

    const toComplete = idIn((await send('handoff', cheenu.id, 'Say hello')).stdout);
    await work('claim', toComplete);
    expect((await work('complete', toComplete, 'Task completed successfully')).code).toBe(0);
    expect((await sender.client.getTask(toComplete)).result).toEqual({ status: 'success', summary: 'Task completed successfully' });

    const structured = idIn((await send('handoff', cheenu.id, 'Write tests')).stdout);
    await work('claim', structured);
    const protocolResult = { status: 'partial', summary: 'Wrote 15 unit tests, coverage at 87%', artifacts: [{ name: 'test_report.md', path: '/path/to/file' }], metrics: { tests_written: 15 } };
    await work('complete', structured, JSON.stringify(protocolResult));
    expect((await sender.client.getTask(structured)).result).toEqual(protocolResult);

    const toFail = idIn((await send('handoff', cheenu.id, 'Call the flaky API')).stdout);
    await work('claim', toFail);
    expect((await work('fail', toFail, 'Error details')).stdout).toBe(`✅ Failed: ${toFail}`);
    expect(await sender.client.getTask(toFail)).toMatchObject({ status: 'failed', status_reason: 'Error details' });

    expect((await work('status', 'reviewing PR 42')).stdout).toBe('✅ Status updated: reviewing PR 42');
    expect(await sender.client.agent(cheenu.id)).toMatchObject({ status_message: 'reviewing PR 42', is_active: true });

    const pending = (await work('tasks', '--pending')).stdout.split('\n');
    expect(pending).toContain(`[pending] ${idIn(direct.stdout)} - Write unit tests for auth module`);
    expect(pending).toContain(`[pending] ${idIn(broadcast.stdout)} - Research best practices for API rate limiting`);
    expect((await work('tasks', '--all')).stdout.split('\n')).toContain(`[rejected] ${toReject} - Rewrite everything in COBOL`);
  });

  it('refuse what they cannot mean, storing nothing', async () => {
    const sender = await newAgent('chhotu');
    const cheenu = await newAgent('cheenu');
    const before = (await sender.client.listTasks({ box: 'sent' })).length;
    const badPriority = await script(sender.token, 'broadcast', ['Research rate limiting', 'someday']);
    expect(badPriority).toMatchObject({ code: 2 });
    expect(badPriority.stderr).toMatch(/"someday" is not a priority — Give one of low, medium, high, urgent/);
    expect(await script(sender.token, 'discover', ['coding'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/not an active filter/) });
    expect((await sender.client.listTasks({ box: 'sent' })).length).toBe(before);

    const id = idIn((await script(sender.token, 'handoff', [cheenu.id, 'Half JSON'])).stdout);
    await script(cheenu.token, 'claim', [id]);
    const broken = await script(cheenu.token, 'complete', [id, '{"findings": ']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/looks like JSON but does not parse/);
    expect(await sender.client.getTask(id)).toMatchObject({ status: 'in_progress', result: null });
  });

  it('answer --help with their help, doing nothing', async () => {
    const bot = await newAgent('helpless');
    await bot.client.heartbeat('working');
    for (const name of ['status', 'handoff', 'broadcast', 'claim', 'complete', 'fail', 'reject', 'discover', 'tasks']) {
      for (const flag of ['--help', '-h']) {
        const help = await script(bot.token, name, [flag]);
        expect(help.code, `${name}.sh ${flag}: ${help.stderr}`).toBe(0);
        expect(help.stdout).toMatch(new RegExp(`^Usage: baton protocol ${name}`));
      }
    }
    expect((await bot.client.agent(bot.id)).status_message).toBe('working');
    expect(await bot.client.listTasks({ box: 'sent' })).toEqual([]);
  });

  it('accept the protocol\'s MC_* variables and refuse an AGENT_ID that is not the token\'s', async () => {
    const cheenu = await newAgent('cheenu');
    const protocolEnv = { SUPABASE_URL: '', SUPABASE_ANON_KEY: '', MC_SUPABASE_URL: stack.SUPABASE_URL, MC_SERVICE_KEY: stack.SUPABASE_SERVICE_ROLE_KEY };
    const mine = await script(cheenu.token, 'tasks', ['--mine'], { ...protocolEnv, AGENT_ID: cheenu.id });
    expect(mine).toMatchObject({ code: 0, stdout: 'No tasks' });
    const wrong = await script(cheenu.token, 'tasks', ['--mine'], { ...protocolEnv, AGENT_ID: 'chhotu' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(new RegExp(`AGENT_ID says "chhotu", but BATON_AGENT_TOKEN is agent "${cheenu.id}"'s token`));
  });
});

describe('the protocol\'s curl calls', () => {
  const rest = (token: string | null, method: string, pathAndQuery: string, body?: unknown) => fetch(`${stack.SUPABASE_URL}/rest/v1/${pathAndQuery}`, {
    method,
    headers: {
      apikey: stack.SUPABASE_ANON_KEY, 'content-type': 'application/json', prefer: 'return=representation',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

  it('answer a direct write to task_handoffs with the RPC to call, and change nothing', async () => {
    const chhotu = await newAgent('chhotu');
    const cheenu = await newAgent('cheenu');
    const created = await rest(chhotu.token, 'POST', 'task_handoffs', { from_agent: chhotu.id, to_agent: cheenu.id, title: 'curl' });
    expect(created.status).toBe(403);
    expect(await created.json()).toMatchObject({ code: '42501', hint: expect.stringContaining('rpc/handoff_task') });

    const task = await chhotu.client.handoff({ to: cheenu.id, title: 'claim me by curl' });
    const claimed = await rest(cheenu.token, 'PATCH', `task_handoffs?id=eq.${task.id}&status=eq.pending`, { status: 'claimed', claimed_by: cheenu.id });
    expect(claimed.status).toBe(403);
    expect(await claimed.json()).toMatchObject({ code: '42501', hint: expect.stringContaining('rpc/claim_task') });
    const deleted = await rest(chhotu.token, 'DELETE', `task_handoffs?id=eq.${task.id}`);
    expect(await deleted.json()).toMatchObject({ code: '42501', hint: expect.stringContaining('rpc/cancel_task') });
    expect(await chhotu.client.getTask(task.id)).toMatchObject({ status: 'pending', claimed_by: null });

    const viaRpc = await rest(cheenu.token, 'POST', 'rpc/claim_task', { p_task_id: task.id, p_start: true });
    expect(viaRpc.status).toBe(200);
    expect(await viaRpc.json()).toMatchObject({ id: task.id, status: 'in_progress', claimed_by: cheenu.id });
  });

  it('let an agent PATCH its own heartbeat, in server time, and tell the anon key what it lacks', async () => {
    const cheenu = await newAgent('cheenu');
    const before = await databaseNow(own.env.DATABASE_URL);
    const patched = await rest(cheenu.token, 'PATCH', `agents?id=eq.${cheenu.id}`, { last_heartbeat: '2020-01-01T00:00:00Z', is_active: true });
    const after = await databaseNow(own.env.DATABASE_URL);
    expect(patched.status).toBe(200);
    const [row] = await patched.json() as Array<{ last_heartbeat: string; is_active: boolean }>;
    expect(row!.is_active).toBe(true);
    expectStampedBetween(row!.last_heartbeat, before, after);

    const anon = await rest(null, 'GET', 'task_handoffs');
    expect(anon.status).toBe(401);
    expect(await anon.json()).toMatchObject({ code: '42501', hint: expect.stringContaining('Authorization: Bearer $BATON_AGENT_TOKEN') });
  });

  it('leave tables that are not Baton\'s to their own rules', async () => {
    const other = uniqueId('other');
    const res = await rest(null, 'GET', `${other.replace('-', '_')}`);
    // No such table: PostgREST's own answer (not found), not Baton's refusal, and no server error.
    expect(res.status).toBe(404);
    expect((await res.json() as { code: string }).code).not.toBe('42501');
  });
});
