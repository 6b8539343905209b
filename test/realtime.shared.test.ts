/**
 * One process, many agents, few connections. On a stack whose plan allows one Realtime connection,
 * the real `baton agent run` with three configs (each naming its agent's token) runs the three agents
 * over that one connection: every one is woken by push (their polls once an hour), none refused, and
 * the topic they share (open work) is one channel. Through the library, agents whose channels pass
 * what a connection may hold are packed onto as many connections as they need, each within it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { PushListener } from '../src/agent/push.js';
import { processChannels } from '../src/client/channels.js';
import { cliPath } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { agentKey, agentKeyEnv } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const own = ownStack('shared', { realtimePlan: 'free,connections=2,channels=4' });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-shared-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(work, { recursive: true, force: true });
});

async function metrics(): Promise<Record<string, number>> {
  const answer = await fetch(`${own.env.SUPABASE_URL}/metrics`, { headers: { apikey: own.env.SUPABASE_SECRET_KEY } });
  return Object.fromEntries((await answer.text()).split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const at = l.lastIndexOf(' ');
    return [l.slice(0, at), Number(l.slice(at + 1))];
  }));
}

const hourly = { poll: '0 0 * * * *', heartbeat: '*/10 * * * * *' };

describe('agents of one process over shared Realtime connections', () => {
  it('runs three agents from three configs in one baton agent run, all on push over one connection', async () => {
    const sender = await own.newAgent('shared-sender');
    const agents = await Promise.all(['a', 'b', 'c'].map((n) => own.newAgent(`shared-${n}`)));
    const ran = path.join(work, 'ran.log');
    const configs = agents.map((agent, i) => {
      const file = path.join(work, `agent-${i}.json`);
      fs.writeFileSync(file, JSON.stringify({
        tokenEnv: `AGENT_${i}_TOKEN`, ...hourly,
        executors: { '*': { command: `cat > /dev/null; echo "$BATON_TASK_ID $BATON_AGENT_ID" >> ${ran}; echo '{"status": "success"}'` } },
      }));
      return file;
    });
    let output = '';
    const child = spawn(process.execPath, [cliPath, 'agent', 'run', ...configs.flatMap((c) => ['--config', c])], {
      detached: true,
      env: {
        PATH: process.env.PATH ?? '', SUPABASE_URL: own.env.SUPABASE_URL, ...agentKeyEnv(own.env), LOG_LEVEL: 'info',
        ...Object.fromEntries(agents.map((a, i) => [`AGENT_${i}_TOKEN`, a.token])),
      },
    });
    children.push(child);
    child.stdout!.on('data', (c: Buffer) => { output += c; });
    child.stderr!.on('data', (c: Buffer) => { output += c; });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await eventually(async () => (output.match(/push is up: listening for work/g) ?? []).length === 3, 60_000, 'the three agents on push');

    const seen = await metrics();
    // One connection for the three: their own topics and the one they share (open work).
    expect(seen.baton_realtime_connections).toBe(1);
    expect(seen.baton_realtime_channels).toBe(4);
    const tasks = await Promise.all(agents.map((a, i) => sender.client.handoff({ to: a.id, title: `shared job ${i}` })));
    // Their polls run once an hour: only push can start this work.
    for (const t of tasks) await eventually(async () => (await sender.client.getTask(t.id)).status === 'completed', 60_000, `${t.title} to complete`);
    const lines = fs.readFileSync(ran, 'utf8').trim().split('\n');
    expect(lines.sort()).toEqual(tasks.map((t, i) => `${t.id} ${agents[i]!.id}`).sort());
    expect(output).not.toMatch(/push refused/);

    process.kill(child.pid!, 'SIGTERM');
    expect(await exited).toBe(0);
  }, 180_000);

  it('refuses two configs of one agent, and an agent\'s own flags beside several configs, saying what to do', async () => {
    const agent = await own.newAgent('shared-twice');
    const file = path.join(work, 'twice.json');
    fs.writeFileSync(file, JSON.stringify({ tokenEnv: 'TWICE_TOKEN', executors: { '*': { command: 'cat' } } }));
    const run = (args: string[]) => new Promise<{ code: number | null; output: string }>((resolve) => {
      let output = '';
      const child = spawn(process.execPath, [cliPath, 'agent', 'run', ...args], {
        env: { PATH: process.env.PATH ?? '', SUPABASE_URL: own.env.SUPABASE_URL, ...agentKeyEnv(own.env), TWICE_TOKEN: agent.token },
      });
      children.push(child);
      child.stdout.on('data', (c: Buffer) => { output += c; });
      child.stderr.on('data', (c: Buffer) => { output += c; });
      child.on('exit', (code) => resolve({ code, output }));
    });
    const twice = await run(['--config', file, '--config', file]);
    expect(twice.code).toBe(2);
    expect(twice.output).toMatch(/two configs run agent "shared-twice-[^"]+" .* Give each config the token of its own agent \("tokenEnv"/);
    const flags = await run(['--config', file, '--config', file, '-c', 'review']);
    expect(flags.code).toBe(2);
    expect(flags.output).toMatch(/--capabilities, --max-concurrent and --metrics-port name one agent's settings/);
    const missing = path.join(work, 'missing-token.json');
    fs.writeFileSync(missing, JSON.stringify({ tokenEnv: 'NO_SUCH_TOKEN', executors: { '*': { command: 'cat' } } }));
    const unset = await run(['--config', file, '--config', missing]);
    expect(unset.code).toBe(2);
    expect(unset.output).toMatch(/NO_SUCH_TOKEN is not set \(.*missing-token.json says its agent's token is there\)/);
  }, 120_000);

  it('packs the channels of many agents onto connections that each hold no more than they may', async () => {
    const sender = await own.newAgent('shared-packer');
    // Two topics each (its own, open work's, shared): seven channels, four a connection, two connections.
    const agents = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => own.newAgent(`shared-packed${n}`)));
    const channels = processChannels({ url: own.env.SUPABASE_URL, ...agentKey(own.env) }, 4);
    const runs = new Map<string, number>();
    const ds = await Promise.all(agents.map((a) => daemon(a, {
      url: own.env.SUPABASE_URL, ...agentKey(own.env), ...hourly, channels,
      executors: { '*': async (task) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success' }; } },
    })));
    await eventually(async () => ds.every((d) => Boolean((d.instance as unknown as { push?: { up: boolean } }).push?.up)), 60_000, 'all six on push');
    expect(channels.counts).toEqual({ connections: 2, channels: 7 });
    const seen = await metrics();
    expect(seen.baton_realtime_connections).toBe(2);
    expect(seen['baton_realtime_joins_refused_total{quota="channels"}'] ?? 0).toBe(0);
    const tasks = await Promise.all(agents.map((a, i) => sender.client.handoff({ to: a.id, title: `packed ${i}` })));
    for (const t of tasks) await eventually(async () => (await sender.client.getTask(t.id)).status === 'completed', 60_000, `${t.title} to complete`);
    expect(tasks.map((t) => runs.get(t.id))).toEqual([1, 1, 1, 1, 1, 1]);
    // Stopping them leaves every channel and closes both connections.
    await Promise.all(ds.map((d) => d.instance.stop({ graceSeconds: 0 })));
    expect(channels.counts).toEqual({ connections: 0, channels: 0 });
    await eventually(async () => (await metrics()).baton_realtime_connections === 0, 30_000, 'both connections closed');
  }, 180_000);

  it('says once for all its listeners what became of a shared channel, not once per listener', async () => {
    // Two agents of one process listen on a topic neither may read: the one channel is refused, and
    // its refusals are said by its first listener, naming both, while the second says nothing of them.
    const agents = await Promise.all(['said1', 'said2'].map((n) => own.newAgent(`shared-${n}`)));
    const channels = processChannels({ url: own.env.SUPABASE_URL, ...agentKey(own.env) });
    const lines = agents.map(() => [] as Array<Record<string, unknown>>);
    const listeners = agents.map((agent, i) => {
      const sink = new Writable({ write(chunk, _enc, done) { lines[i]!.push(JSON.parse(String(chunk)) as Record<string, unknown>); done(); } });
      const listener = new PushListener({ channels, token: agent.token }, ['agent:shared-nobody'], { work() {}, news() {}, up() {} }, pino({ level: 'info' }, sink));
      listener.start();
      return listener;
    });
    try {
      const couldNot = (i: number) => lines[i]!.filter((l) => l.msg === 'could not listen; polling instead');
      await eventually(async () => couldNot(0).length >= 2, 60_000, 'the channel to be refused twice');
      expect(couldNot(0)[0]).toMatchObject({ topic: 'agent:shared-nobody', status: 'CHANNEL_ERROR', listeners: 2 });
      expect(channels.counts.channels).toBe(1);
      expect(couldNot(1)).toEqual([]);
    } finally {
      await Promise.all(listeners.map((l) => l.stop()));
    }
  }, 120_000);
});
