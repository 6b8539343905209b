/** `baton watch` in its stream mode, as scripts use it: one JSON line per event, moved by push. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

/** Starts `baton watch …` as `agent`; its lines arrive in `lines`, `exited` resolves with its code. */
function watch(agent: TestAgent, ...args: string[]) {
  const child = spawn(process.execPath, [cliPath, 'watch', ...args], {
    env: { ...process.env, NO_COLOR: '1', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token },
  });
  const lines: Array<Record<string, unknown>> = [];
  let rest = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop()!;
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part));
  });
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
  return { child, lines, exited };
}

describe('baton watch', () => {
  it('follows a task and exits 0 when it completes, one JSON line per change', async () => {
    const sender = await newAgent('follower');
    const worker = await newAgent('worker');
    const task = await sender.client.handoff({ to: worker.id, title: 'follow me' });
    const follow = watch(sender, '--task', task.id.slice(0, 8));
    await eventually(async () => follow.lines.length > 0 || undefined, 10_000, 'the first line');
    expect(follow.lines[0]).toMatchObject({ task_id: task.id, status: 'pending' });
    const held = await worker.client.claim(task.id, { start: true });
    await eventually(async () => follow.lines.some((l) => l.status === 'in_progress') || undefined, 10_000, 'the start');
    await worker.client.progress(task.id, 'halfway', 50);
    // Each line is the task as watch read it after a change; a change it reads together with the next
    // is one line, so the progress is seen before the task completes.
    await eventually(async () => follow.lines.some((l) => l.progress === 'halfway') || undefined, 10_000, 'the progress');
    await worker.client.complete(held.id, held.claim_token);
    const { code } = await follow.exited;
    expect(code).toBe(0);
    expect(follow.lines.map((l) => l.status)).toEqual(['pending', 'in_progress', 'in_progress', 'completed']);
    expect(follow.lines[2]).toMatchObject({ progress: 'halfway' });
  });

  it('exits 1 when the task ends otherwise, saying how', async () => {
    const sender = await newAgent('follower');
    const worker = await newAgent('worker');
    const task = await sender.client.handoff({ to: worker.id, title: 'doomed' });
    const follow = watch(sender, '--task', task.id);
    await eventually(async () => follow.lines.length > 0 || undefined, 10_000, 'the first line');
    await worker.client.reject(task.id, 'not my job');
    const { code, stderr } = await follow.exited;
    expect(code).toBe(1);
    expect(stderr).toMatch(/ended rejected: not my job/);
  });

  it('streams what arrives for the agent', async () => {
    const sender = await newAgent('sender');
    const watcher = await newAgent('watcher');
    const stream = watch(watcher, '--json');
    try {
      // Hand off until the stream has joined and seen one.
      const seen = await eventually(async () => {
        const task = await sender.client.handoff({ to: watcher.id, title: 'see me' });
        await new Promise((r) => setTimeout(r, 300));
        return stream.lines.find((l) => l.task_id === task.id);
      }, 10_000, 'a work event');
      expect(seen).toMatchObject({ event: 'work', status: 'pending' });
    } finally {
      stream.child.kill('SIGINT');
      expect((await stream.exited).code).toBe(0);
    }
  });
});
