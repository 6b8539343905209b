/**
 * Whether the operator's board keeps push while the fleet grows: `baton board` (the real command, as
 * the operator) runs for BOARD_MINUTES (default 10) while BOARD_AGENTS agents (default 50) register one
 * after another, each with a capability no earlier agent had. After each registration a task goes to
 * the newcomer and a broadcast to its capability, and the script waits for each to reach the board's
 * event stream as a pushed change naming the task (the board's slow look for changes never names one).
 * Every 5 s it asks the board whether push is up. It reports how many hand-offs were heard by push,
 * how long they took, and every moment push was down.
 *
 *   npm run bench:board-push
 *   BOARD_MINUTES=2 BOARD_AGENTS=10 npm run bench:board-push
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminClient, createBatonClient, parseSigningKey } from '../src/index.js';
import { startStackProcess } from './stack-process.js';
import { median } from './stats.js';

const MINUTES = Number(process.env.BOARD_MINUTES ?? 10);
const AGENTS = Number(process.env.BOARD_AGENTS ?? 50);
/** How long a hand-off may take to reach the board by push before it counts as not heard. */
const HEARD_WITHIN_MS = 30_000;
const cli = fileURLToPath(new URL('../dist/cli/index.js', import.meta.url));
const say = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-board-push-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
const board = spawn(process.execPath, [cli, 'board', '--as', 'operator'], {
  env: { ...process.env, ...stack.env, BATON_AGENT_TOKEN: '' }, stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const { env } = stack;
  const url = new URL(await new Promise<string>((resolve, reject) => {
    let out = '';
    board.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      const found = /https?:\/\/\S+/.exec(out)?.[0];
      if (found) resolve(found);
    });
    board.once('exit', (code) => reject(new Error(`baton board exited ${code} before it printed its URL`)));
  }));
  const auth = { authorization: `Bearer ${url.searchParams.get('token')}` };

  // The board's event stream, read as an open page reads it: each pushed change, with when it came.
  const heardAt = new Map<string, number>();
  const downFrames: string[] = [];
  const stream = new AbortController();
  const events = await fetch(new URL('/api/events', url), { headers: auth, signal: stream.signal });
  if (!events.ok || !events.body) throw new Error(`the board's event stream answered ${events.status}`);
  void (async () => {
    let buffered = '';
    for await (const chunk of events.body!.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const frames = buffered.split('\n\n');
      buffered = frames.pop()!;
      for (const frame of frames) {
        if (frame.startsWith('event: push') && frame.includes('"up":false')) downFrames.push(`${new Date().toISOString()} ${frame}`);
        if (!frame.startsWith('event: change')) continue;
        for (const id of frame.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []) if (!heardAt.has(id)) heardAt.set(id, Date.now());
      }
    }
  })().catch((err: unknown) => { if (!stream.signal.aborted) throw err; });

  // The board's own word on push, every 5 s.
  const samples: Array<{ at: string; push: boolean }> = [];
  const sampler = setInterval(() => {
    void fetch(new URL('/api/session', url), { headers: auth }).then((r) => r.json() as Promise<{ push: boolean }>)
      .then(({ push }) => samples.push({ at: new Date().toISOString(), push }), () => samples.push({ at: new Date().toISOString(), push: false }));
  }, 5000);

  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const { token } = await admin.createAgent({ id: 'board-push-sender' });
  const sender = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token });
  /** Hands a task to `to` (an agent, or a capability's queue) and says how long push took to bring it, if it did. */
  const handOff = async (to: { agent: string } | { capability: string }): Promise<{ id: string; ms?: number }> => {
    const task = await sender.handoff('agent' in to
      ? { to: to.agent, title: `for ${to.agent}`, allowOffline: true }
      : { requiredCapabilities: [to.capability], title: `for any agent with ${to.capability}`, allowOffline: true });
    const at = Date.now();
    while (!heardAt.has(task.id) && Date.now() - at < HEARD_WITHIN_MS) await sleep(100);
    return { id: task.id, ms: heardAt.has(task.id) ? heardAt.get(task.id)! - at : undefined };
  };
  const joins: number[] = [];
  const lateJoins: string[] = [];
  const delays: number[] = [];
  const missed: string[] = [];
  const started = Date.now();
  const every = (MINUTES * 60_000) / AGENTS;
  for (let i = 0; i < AGENTS; i += 1) {
    await sleep(Math.max(0, started + i * every - Date.now()));
    const id = `newcomer-${i}`;
    await admin.createAgent({ id, capabilities: [`skill-${i}`] });
    const registered = Date.now();
    // The board joins the newcomer's topics after its next look sees the agent; until then its look, not
    // push, tells the pages. A task goes to the newcomer every 1.5 s until one arrives by push.
    for (;;) {
      const task = await sender.handoff({ to: id, title: `for ${id}`, allowOffline: true });
      await sleep(1500);
      if (heardAt.has(task.id)) {
        joins.push(heardAt.get(task.id)! - registered);
        break;
      }
      if (Date.now() - registered > 60_000) {
        lateJoins.push(id);
        break;
      }
    }
    // Then its capability's queue, and an earlier agent's topic: push must still carry both.
    for (const to of [{ capability: `skill-${i}` }, { agent: `newcomer-${Math.floor(Math.random() * (i + 1))}` }]) {
      const { id: taskId, ms } = await handOff(to);
      if (ms === undefined) missed.push(`${taskId} (${JSON.stringify(to)})`);
      else delays.push(ms);
    }
  }
  clearInterval(sampler);
  stream.abort();

  const down = samples.filter((s) => !s.push);
  say(`${AGENTS} agents registered over ${((Date.now() - started) / 60_000).toFixed(1)} minutes, each with a capability no agent had before.`);
  say(`The board joined each newcomer's topics: ${joins.length} of ${AGENTS}; from registration to the first task heard by push, median ${median(joins).toFixed(0)} ms, slowest ${Math.max(...joins).toFixed(0)} ms.`);
  say(`Hand-offs to joined topics heard by push within ${HEARD_WITHIN_MS / 1000} s: ${delays.length} of ${delays.length + missed.length}; median ${median(delays).toFixed(0)} ms, slowest ${Math.max(...delays).toFixed(0)} ms.`);
  say(`The board said push was up in ${samples.length - down.length} of ${samples.length} samples (every 5 s); "push down" frames on its stream: ${downFrames.length}.`);
  for (const id of lateJoins) say(`not joined within 60 s: ${id}`);
  for (const m of missed) say(`not heard by push: ${m}`);
  for (const s of down) say(`push down at ${s.at}`);
  for (const f of downFrames) say(`pushed: ${f}`);
  process.exitCode = lateJoins.length || missed.length || down.length || downFrames.length ? 1 : 0;
} finally {
  if (board.exitCode === null) {
    board.kill('SIGTERM');
    await new Promise((resolve) => board.once('exit', resolve));
  }
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
