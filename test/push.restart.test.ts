/**
 * Push is a way to wake up sooner, never a way to lose work: with the gateway (and with it Realtime)
 * gone mid-run, daemons fall back to polling, then listen again once it is back, and every task
 * handed off is done. A stack of its own, since its gateway is stopped.
 */
import { describe, expect, it } from 'vitest';
import { createAgent, type BatonAgent } from '../src/agent/daemon.js';
import { eventually } from './daemon-helpers.js';
import { agentKey } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const own = ownStack('push-restart');

describe('a gateway restart', () => {
  it('loses no task: daemons poll while push is down, and listen again once it is back', async () => {
    const sender = await own.newAgent('sender');
    const workers = await Promise.all([1, 2].map((i) => own.newAgent(`worker-${i}`, { capabilities: ['steady'], maxConcurrent: 4 })));
    const daemons: BatonAgent[] = workers.map((w) => createAgent({
      url: own.env.SUPABASE_URL, ...agentKey(own.env), token: w.token, poll: '* * * * * *', heartbeat: '*/2 * * * * *',
      executors: { '*': async () => { await new Promise((r) => setTimeout(r, 50)); return { status: 'success' }; } },
    }));
    const pushUp = () => daemons.every((d) => (d as unknown as { push?: { up: boolean } }).push?.up);
    try {
      await Promise.all(daemons.map((d) => d.start()));
      await eventually(async () => pushUp() || undefined, 10_000, 'push to be up');
      const ids: string[] = [];
      const handOff = async (n: number) => {
        for (let i = 0; i < n; i += 1) ids.push((await sender.client.broadcast({ title: `steady ${ids.length}`, requiredCapabilities: ['steady'] })).id);
      };
      await handOff(10);
      await own.gateway.stop();
      await new Promise((r) => setTimeout(r, 2000));
      await own.gateway.start();
      // Back at once for REST; push comes back as realtime-js reconnects and rejoins.
      await handOff(10);
      await eventually(async () => pushUp() || undefined, 40_000, 'push to be up again');
      await handOff(10);
      const done = await eventually(async () => {
        const tasks = await Promise.all(ids.map((id) => sender.client.getTask(id)));
        return tasks.every((t) => t.status === 'completed') && tasks;
      }, 30_000, 'every task to complete');
      expect(done).toHaveLength(30);
    } finally {
      await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
    }
  }, 90_000);
});
