/**
 * The board as users serve it: `baton board` from the built, bundled CLI (dist/cli/index.js), where
 * the minifier renames classes. A refusal keeps its HTTP status there: a stranger's task is not found
 * (404), a forbidden act is 403, as the in-process board answers (board.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { newAgent, stack } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

const started: ChildProcess[] = [];
afterAll(() => { for (const child of started) child.kill('SIGTERM'); });

describe('baton board, from the bundled CLI', () => {
  it('answers 404 for a stranger\'s task and 403 for an act the database forbids', async () => {
    const [me, friend, strangerA, strangerB] = await Promise.all([newAgent('bundle-me'), newAgent('bundle-friend'), newAgent('bundle-stranger'), newAgent('bundle-stranger')]);
    const theirs = await strangerA.client.handoff({ to: strangerB.id, title: 'not for me', allowOffline: true });
    const mine = await friend.client.handoff({ to: me.id, title: 'sent to me', allowOffline: true });
    const child = spawn(process.execPath, [cliPath, 'board'], {
      env: { ...process.env, SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: me.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c; });
    const url = new URL(await eventually(async () => /https?:\/\/\S+/.exec(out)?.[0], 30_000, 'the board\'s URL'));
    const token = url.searchParams.get('token')!;
    const api = (p: string, init: RequestInit = {}) => fetch(`${url.origin}/api/${p}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
    const unseen = await api(`tasks/${theirs.id}`);
    expect(unseen.status).toBe(404);
    expect((await unseen.json()).code).toBe('BT002');
    // Cancelling a task one did not send is the database's refusal: 403, not a conflict.
    const cancel = await api('actions', { method: 'POST', body: JSON.stringify({ action: 'cancel', task: mine.id, reason: 'not mine to cancel' }) });
    expect(cancel.status, await cancel.clone().text()).toBe(403);
  });
});
