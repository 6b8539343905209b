/**
 * The embedded stack keeps a plan's Realtime quotas as hosted Realtime does, at small numbers here
 * (three connections, two channels a connection): a join past the channels refused with hosted's
 * reason, a connection past the plan's refused with HTTP 429, each counted in the stack's Realtime
 * metrics. The real daemons and `baton mcp` refused meet it alike: each says once that push was
 * refused and why, does its work by polling meanwhile, and listens again later, spread out; after a
 * restart of the gateway the daemons come back without a storm of joins. Nothing is lost or run twice.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cliPath } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { agentKey, agentKeyEnv } from './keys-mode.js';
import { ownStack } from './own-stack.js';
import type { TestAgent } from './helpers.js';

const own = ownStack('quotas', { realtimePlan: 'free,connections=3,channels=2' });
const clients: Client[] = [];
afterAll(async () => { await Promise.all(clients.map((c) => c.close())); });

/** The stack's Realtime metrics, as name{labels} → value. */
async function metrics(): Promise<Record<string, number>> {
  const answer = await fetch(`${own.env.SUPABASE_URL}/metrics`, { headers: { apikey: own.env.SUPABASE_SECRET_KEY } });
  expect(answer.status).toBe(200);
  return Object.fromEntries((await answer.text()).split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const at = l.lastIndexOf(' ');
    return [l.slice(0, at), Number(l.slice(at + 1))];
  }));
}

const worker = (agent: TestAgent, runs: Map<string, number>, capabilities?: string[]) => daemon(agent, {
  url: own.env.SUPABASE_URL, ...agentKey(own.env), capabilities,
  executors: { '*': async (task) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success', summary: `did ${task.title}` }; } },
});
const refusedLines = (lines: Array<Record<string, unknown>>) => lines.filter((l) => String(l.msg).startsWith('push refused by Realtime'));
const isUp = (d: { instance: unknown }) => Boolean((d.instance as { push?: { up: boolean } }).push?.up);

describe('the embedded stack at a plan\'s Realtime quotas', () => {
  it('serves its metrics to the secret key only', async () => {
    const answer = await fetch(`${own.env.SUPABASE_URL}/metrics`, { headers: { apikey: own.env.SUPABASE_PUBLISHABLE_KEY } });
    expect(answer.status).toBe(401);
    expect(await metrics()).toMatchObject({ baton_realtime_connections_limit: 3 });
  });

  it('refuses a join past the channels a connection may hold; the daemon says so once and does its work by polling', async () => {
    const [sender, wide] = await Promise.all([own.newAgent('quota-sender'), own.newAgent('quota-wide', { capabilities: ['review', 'code'] })]);
    const runs = new Map<string, number>();
    const d = await worker(wide, runs, ['review', 'code']); // four topics, two allowed a connection
    await eventually(async () => refusedLines(d.lines).length > 0, 60_000, 'the join to be refused');
    expect(refusedLines(d.lines)[0]).toMatchObject({ reason: 'ChannelRateLimitReached: Too many channels', level: 40 });
    const task = await sender.client.handoff({ to: wide.id, title: 'by polling' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'completed', 60_000, 'the task to complete by polling');
    expect(runs.get(task.id)).toBe(1);
    expect(refusedLines(d.lines)).toHaveLength(1);
    expect((await metrics())['baton_realtime_joins_refused_total{quota="channels"}']).toBeGreaterThanOrEqual(1);
    await d.instance.stop({ graceSeconds: 0 });
  }, 180_000);

  it('refuses a connection past the plan\'s with 429; daemons and baton mcp say so once, work by polling, and come back when one frees', async () => {
    const sender = await own.newAgent('quota-lead');
    const agents = await Promise.all([1, 2, 3, 4].map((n) => own.newAgent(`quota-worker${n}`)));
    const runs = new Map<string, number>();
    const first = await Promise.all(agents.slice(0, 3).map((a) => worker(a, runs)));
    await eventually(async () => first.every(isUp), 60_000, 'three daemons on push');
    const fourth = await worker(agents[3]!, runs);
    await eventually(async () => refusedLines(fourth.lines).length > 0, 60_000, 'the fourth to be refused');
    expect(String(refusedLines(fourth.lines)[0]!.reason)).toMatch(/^HTTP 429: Too many connected users/);

    // baton mcp, refused alike: it says so once on stderr and answers from polling.
    const transport = new StdioClientTransport({
      command: process.execPath, args: [cliPath, 'mcp', '--poll', '2'], stderr: 'pipe',
      env: { PATH: process.env.PATH ?? '', SUPABASE_URL: own.env.SUPABASE_URL, ...agentKeyEnv(own.env), BATON_AGENT_TOKEN: sender.token, LOG_LEVEL: 'info' },
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const mcp = new Client({ name: 'quota-host', version: '1.0.0' });
    await mcp.connect(transport);
    clients.push(mcp);
    await eventually(async () => stderr.includes('push refused by Realtime'), 60_000, 'baton mcp to be refused');

    // Work for all four, the refused one too: each done once.
    const tasks = await Promise.all(agents.map((a, i) => sender.client.handoff({ to: a.id, title: `job ${i}` })));
    for (const t of tasks) await eventually(async () => (await sender.client.getTask(t.id)).status === 'completed', 60_000, `${t.title} to complete`);
    expect(tasks.map((t) => runs.get(t.id))).toEqual([1, 1, 1, 1]);
    const seen = await metrics();
    expect(seen.baton_realtime_connections).toBeLessThanOrEqual(3);
    expect(seen['baton_realtime_connections_refused_total{quota="connections"}']).toBeGreaterThanOrEqual(1);
    expect(refusedLines(fourth.lines)).toHaveLength(1);
    expect(stderr.match(/push refused by Realtime/g)).toHaveLength(1);

    // Two daemons go (baton mcp may take one of the freed connections): the refused daemon listens
    // again after its wait (doubling while it was refused), and is on push.
    await Promise.all(first.slice(0, 2).map((d) => d.instance.stop({ graceSeconds: 0 })));
    await eventually(async () => isUp(fourth), 180_000, 'the fourth daemon back on push');
    expect(fourth.lines.some((l) => l.msg === 'push is back after Realtime refused it: listening again')).toBe(true);
  }, 300_000);

  it('comes back after the gateway restarts without a storm of joins: each daemon joins again, spread out', async () => {
    const agents = await Promise.all([1, 2].map((n) => own.newAgent(`quota-restart${n}`)));
    const runs = new Map<string, number>();
    const ds = await Promise.all(agents.map((a) => worker(a, runs)));
    await eventually(async () => ds.every(isUp), 60_000, 'both on push');
    const before = await metrics();
    await own.gateway.stop();
    await eventually(async () => ds.every((d) => !isUp(d)), 60_000, 'both to see push go');
    await own.gateway.start();
    await eventually(async () => ds.every(isUp), 90_000, 'both back on push');
    const after = await metrics();
    // Two topics each, joined again a few times at most (a rejoin or two while the gateway comes back), none refused for joins per second.
    expect(after.baton_realtime_joins_total! - before.baton_realtime_joins_total!).toBeLessThanOrEqual(16);
    expect(after['baton_realtime_joins_refused_total{quota="joins"}']).toBe(before['baton_realtime_joins_refused_total{quota="joins"}']);
    const sender = await own.newAgent('quota-after');
    const task = await sender.client.handoff({ to: agents[0]!.id, title: 'after the restart' });
    // By push, or else by the safety-net poll (slowPollSeconds, 60 s, jittered): seen once under the
    // full suite's load, push up again but the wake-up not heard, and a 60 s wait lost to the poll's.
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'completed', 150_000, 'work after the restart');
  }, 360_000);
});
