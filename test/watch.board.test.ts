/** The board on a real terminal (tmux), as a person would watch it: a hand-off moves across it, q quits. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { database, newAgent, stack } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

const hasTmux = (() => {
  try {
    execFileSync('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
})();
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });

describe.skipIf(!hasTmux)('baton watch on a terminal', () => {
  const db = database();
  it('shows a hand-off move across the board, behind more finished tasks than it lists, and quits on q', async () => {
    const boss = await newAgent('boss');
    const viewer = await newAgent('viewer');
    // A history the board must look past: more urgent tasks than one listing holds, all cancelled.
    await boss.client.handoffMany(Array.from({ length: 201 }, (_, i) => ({ to: viewer.id, title: `old ${i}`, priority: 'urgent' as const })));
    await db.query("update task_handoffs set status = 'cancelled', status_reason = 'history' where from_agent = $1", [boss.id]);
    const session = `baton-board-${viewer.id}`;
    const env = { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: viewer.token, NO_COLOR: '1' };
    const exports = Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(' ');
    tmux('new-session', '-d', '-s', session, '-x', '140', '-y', '40', `env ${exports} ${process.execPath} ${cliPath} watch`);
    const screen = () => tmux('capture-pane', '-p', '-t', session);
    try {
      await eventually(async () => screen().includes('live (push)') || undefined, 15_000, 'the board to be live');
      await viewer.client.heartbeat('watching');
      const task = await boss.client.handoff({ to: viewer.id, title: 'Move me across' });
      await eventually(async () => /pending \(1\)[\s\S]*Move me across/.test(screen()) || undefined, 5000, 'the task in pending');
      const held = await viewer.client.claim(task.id, { start: true });
      await eventually(async () => /in progress \(1\)/.test(screen()) || undefined, 5000, 'the task in progress');
      await viewer.client.complete(held.id, held.claim_token);
      await eventually(async () => /done recently \(1\)/.test(screen()) || undefined, 5000, 'the task done');
      expect(screen()).not.toMatch(/\u001b\[/);
      tmux('send-keys', '-t', session, 'q');
      await eventually(async () => {
        try {
          tmux('has-session', '-t', session);
          return undefined;
        } catch {
          return true;
        }
      }, 5000, 'the board to quit');
    } finally {
      try { tmux('kill-session', '-t', session); } catch { /* already gone */ }
    }
  });
});
