/**
 * Past a plan's messages per second the embedded stack drops broadcasts, as hosted Realtime drops
 * broadcasts from the database while a project is over its rate (supabase/realtime's
 * replication_connection.ex): nobody is told. A daemon on push then hears of only some of its work;
 * its safety-net poll finds the rest, it says once that push may be dropping messages and claims on
 * every poll for a while. Every task is done, once. (Four messages a second here.)
 */
import { describe, expect, it } from 'vitest';
import { daemon, eventually } from './daemon-helpers.js';
import { agentKey } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const own = ownStack('quota-messages', { realtimePlan: 'free,messages=4' });

async function metrics(): Promise<Record<string, number>> {
  const text = await (await fetch(`${own.env.SUPABASE_URL}/metrics`, { headers: { apikey: own.env.SUPABASE_SECRET_KEY } })).text();
  return Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
}

describe('a plan\'s messages per second', () => {
  it('drops what is over it; the daemon\'s safety net finds the work, says so once, and nothing is lost or run twice', async () => {
    const [sender, worker] = await Promise.all([own.newAgent('rate-sender'), own.newAgent('rate-worker', { maxConcurrent: 10 })]);
    const runs = new Map<string, number>();
    const d = await daemon(worker, {
      url: own.env.SUPABASE_URL, ...agentKey(own.env), slowPollSeconds: 3,
      executors: { '*': async (task) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success', summary: 'done' }; } },
    });
    await eventually(async () => (d.instance as unknown as { push?: { up: boolean } }).push?.up, 60_000, 'push to be up');
    // Handed on over some fifteen seconds: hosted's rate is an average over ticks of five seconds.
    const tasks = [];
    for (let i = 0; i < 60; i += 1) {
      tasks.push(await sender.client.handoff({ to: worker.id, title: `steady ${i}` }));
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const t of tasks) await eventually(async () => (await sender.client.getTask(t.id)).status === 'completed', 120_000, `${t.title} to complete`);
    expect(tasks.map((t) => runs.get(t.id))).toEqual(tasks.map(() => 1));
    expect((await metrics())['baton_realtime_messages_dropped_total{quota="rate"}']).toBeGreaterThan(0);
    const said = d.lines.filter((l) => String(l.msg).startsWith('the safety-net poll found work push had not announced'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40 });
  }, 240_000);
});
