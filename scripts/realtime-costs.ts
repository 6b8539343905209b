/**
 * What each kind of process and each step of a task costs in Realtime, read from the stack's /metrics
 * (hosted counts a message for each broadcast sent and for each delivered): a daemon's connection,
 * channels and joins; the messages of a hand-off, its claim and start, a question and its answer, the
 * completion; `baton mcp` and `baton watch` beside them. Figures for docs/hosted-supabase.md.
 *
 *   npm run bench:realtime-costs
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createAgent, createBatonClient } from '../src/index.js';
import { silentLogger } from '../src/logger.js';
import { fleetStack } from './fleet.js';

const say = (text: string) => process.stdout.write(`${text}\n`);
const { env, admin, close } = await fleetStack('costs', { realtimePlan: 'unlimited' });
const metric = async () => {
  const text = await (await fetch(`${env.SUPABASE_URL}/metrics`, { headers: { apikey: env.SUPABASE_SECRET_KEY } })).text();
  const m = Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
  return { connections: m.baton_realtime_connections!, channels: m.baton_realtime_channels!, joins: m.baton_realtime_joins_total!, sent: m.baton_realtime_messages_sent_total!, delivered: m.baton_realtime_messages_delivered_total! };
};
const settle = () => sleep(1500);
const diff = (a: Awaited<ReturnType<typeof metric>>, b: typeof a) => ({ sent: b.sent - a.sent, delivered: b.delivered - a.delivered, joins: b.joins - a.joins });
try {
  const key = { url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY };
  const [lead, worker, caps] = await Promise.all(['costs-lead', 'costs-worker', 'costs-caps'].map((id) => admin.createAgent({ id, capabilities: id === 'costs-caps' ? ['review', 'code'] : [] })));
  const sender = createBatonClient({ ...key, token: lead!.token });
  const m0 = await metric();
  const d = createAgent({ ...key, token: worker!.token, log: silentLogger, executors: { '*': async (task, ctx) => {
    if (task.title === 'asks') await ctx.ask('Which?');
    return { status: 'success', summary: 'done' };
  } } });
  await d.start();
  await settle();
  const m1 = await metric();
  say(`a daemon (no capabilities): ${m1.connections - m0.connections} connection, ${m1.channels - m0.channels} channels, ${m1.joins - m0.joins} joins at start`);
  const dc = createAgent({ ...key, token: caps!.token, capabilities: ['review', 'code'], log: silentLogger, executors: {} });
  await dc.start();
  await settle();
  const m2 = await metric();
  say(`a daemon with two capabilities: ${m2.channels - m1.channels} channels, ${m2.joins - m1.joins} joins at start`);
  // The sender's own daemon listens too, as it would to hear of its results.
  const ds = createAgent({ ...key, token: lead!.token, log: silentLogger, executors: {} });
  await ds.start();
  await settle();
  const m3 = await metric();
  const rounds = 20;
  for (let i = 0; i < rounds; i += 1) {
    const t = await sender.handoff({ to: 'costs-worker', title: 'plain' });
    for (;;) { if ((await sender.getTask(t.id)).status === 'completed') break; await sleep(50); }
  }
  await settle();
  const m4 = await metric();
  const task = diff(m3, m4);
  say(`a task's life (hand-off, claim and start, completion), sender's and worker's daemons on push: ${(task.sent / rounds).toFixed(1)} broadcasts sent, ${(task.delivered / rounds).toFixed(1)} delivered: ${((task.sent + task.delivered) / rounds).toFixed(1)} messages as hosted counts them`);
  const asked = await sender.handoff({ to: 'costs-worker', title: 'asks' });
  for (;;) { if ((await sender.getTask(asked.id)).status === 'input_required') break; await sleep(50); }
  await settle();
  const m5 = await metric();
  await sender.answer(asked.id, 'that one');
  for (;;) { if ((await sender.getTask(asked.id)).status === 'completed') break; await sleep(50); }
  await settle();
  const m6 = await metric();
  const q = diff(m4, m5);
  const a = diff(m5, m6);
  say(`a question: up to it ${q.sent + q.delivered} messages (hand-off, claim, the question); the answer and the end ${a.sent + a.delivered}`);
  const batch = await sender.handoffMany(Array.from({ length: 100 }, (_, i) => ({ to: 'costs-worker', title: `batch ${i}` })));
  const ids = batch.map((b) => b.task_id!);
  for (;;) { if ((await sender.getTasks(ids)).every((t) => t.status === 'completed')) break; await sleep(200); }
  await settle();
  const m7 = await metric();
  const b = diff(m6, m7);
  say(`100 hand-offs in one batch, done: ${b.sent} broadcasts sent, ${b.delivered} delivered (${((b.sent + b.delivered) / 100).toFixed(1)} messages a task)`);
  await Promise.all([d.stop({ graceSeconds: 0 }), dc.stop({ graceSeconds: 0 }), ds.stop({ graceSeconds: 0 })]);
} finally {
  await close();
}
