/**
 * Baton between two real OpenClaw gateways (npm openclaw on Node 24, installed once into a cache by
 * scripts/openclaw-runtime.mjs), each with one agent and its A2A channel on. A scripted model stands in
 * for the LLM and decides what each agent does: call `exec` with a `baton` command, as the skill
 * teaches, or answer. Gateway A's agent hands work to a capability; gateway B's agent does it through
 * Baton (the openclaw executor of B's daemon); the result and B's questions reach A's agent through
 * A's daemon (the teller), and A answers with `baton answer`.
 */
import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentFile } from '../src/agent/options.js';
import { freePort } from '../src/stack/ports.js';
import { baton } from './cli.js';
import { createAgent, type AgentOptions, type BatonAgent } from '../src/agent/daemon.js';
import { eventually, fast } from './daemon-helpers.js';
import { createRequire } from 'node:module';
import { startA2AServer, type A2AServer } from '../src/a2a/server.js';
import { silentLogger } from '../src/logger.js';
import { admin, newAgent, stack, type TestAgent } from './helpers.js';
import { agentKey, agentKeyEnv } from './keys-mode.js';
import { Gateway, openclawRuntime, sayToAgent, scriptedModel, type Action, type Turn } from './openclaw-gateway.js';

const run = promisify(execFile);

/** Work sent as "slow" keeps B's agent busy (its model call unanswered) until the test lets it go. */
const slow = (() => {
  let release = () => {};
  const until = new Promise<void>((resolve) => { release = resolve; });
  const state = { held: true, until, release: () => { state.held = false; release(); } };
  return state;
})();

/** What the agents of both gateways do, by what they were told. */
function script(turn: Turn): Action | Promise<Action> {
  // B's provider, while the test says it fails, fails every call (OpenClaw's own retries too).
  if (turn.model === 'gateway-b' && providerB.failing && providerB.times !== 0) {
    if (providerB.times !== undefined) providerB.times -= 1;
    const error = { 400: 'provider rejected the request', 429: 'rate limited: too many requests' }[providerB.failing] ?? 'provider internal error';
    return { status: providerB.failing, error };
  }
  const last = turn.toolResults.at(-1);
  const said = turn.inbound;
  if (turn.model === 'gateway-a') {
    // A person asks A's agent to get a sum done by whoever can.
    const sum = /^Get (\d+) \+ (\d+) done by a math agent \((\w+)\)/.exec(said);
    if (sum) {
      if (!turn.system.includes('<name>baton</name>')) return { text: 'I have no baton skill.' };
      if (!last) return { exec: `baton broadcast "Sum ${sum[1]} and ${sum[2]} (${sum[3]})" -c math --json` };
      const id = (JSON.parse(last.slice(last.indexOf('{'))) as { id: string }).id;
      return { text: `Handed over as Baton task ${id}.` };
    }
    // B asks a question through Baton: A's agent answers it.
    const asked = /asks about Baton task (\S+) .*?:\n\n(.*)\n/s.exec(said);
    if (asked) return last ? { text: 'Answered.' } : { exec: `baton answer ${asked[1]} "in metres"` };
    return { text: 'Noted.' };
  }
  // Gateway B's agent does the work handed to it through Baton.
  const task = /^Baton task (\S+) from \S+: Sum (\d+) and (\d+) \((\w+)\)/.exec(said);
  if (task) {
    const total = Number(task[2]) + Number(task[3]);
    if (task[4] === 'slow' && slow.held) return slow.until.then(() => ({ text: `The sum is ${total}.` }));
    if (task[4] === 'ask' && !last) return { exec: `baton ask ${task[1]} "Which unit?"` };
    if (task[4] === 'ask') return { text: `I asked ${'the sender'} which unit; waiting for the answer.` };
    return { text: `The sum is ${total}.` };
  }
  const answer = /^Answer from \S+ to your question on Baton task \S+:\n\n(.*?)\n/s.exec(said);
  if (answer) return { text: `The sum is 5 ${answer[1]!.replace(/^in /, '')}.` };
  return { text: 'Nothing to do.' };
}

/** What B's model provider answers meanwhile: an HTTP error status (for its next `times` calls, or every
 * call), or undefined when it works. */
const providerB: { failing?: number; times?: number } = {};
let root: string;
let model: Awaited<ReturnType<typeof scriptedModel>>;
let alice: TestAgent;
let bob: TestAgent;
let gatewayA: Gateway;
let gatewayB: Gateway;
const tokenA = crypto.randomBytes(24).toString('hex');
const tokenB = crypto.randomBytes(24).toString('hex');
let bobDaemon: BatonAgent | undefined;
let a2a: A2AServer;
let listed: Record<'ready' | 'withoutToken' | 'withoutBaton', unknown>;
const daemons: BatonAgent[] = [];

/** A daemon for the whole file (the shared helper stops its daemons after each test), stopped in afterAll. */
async function daemon(agent: TestAgent, options: Partial<AgentOptions>): Promise<BatonAgent> {
  const instance = createAgent({ url: stack.SUPABASE_URL, ...agentKey(stack), token: agent.token, ...fast, ...options });
  daemons.push(instance);
  await instance.start();
  return instance;
}

const batonEnv = (agent: TestAgent) => ({ SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token });

/** B's daemon, from a baton.agent.json as a user writes it: its work goes to gateway B. */
async function startBob() {
  const file = path.join(root, 'bob.agent.json');
  fs.writeFileSync(file, JSON.stringify({ capabilities: ['math'], executors: { '*': { openclaw: gatewayB.url, tokenEnv: 'BOB_OPENCLAW_TOKEN' } } }));
  process.env.BOB_OPENCLAW_TOKEN = tokenB;
  const { every: _every, ...options } = await loadAgentFile(file);
  // Its log kept in the test's folder, for what a failure says.
  bobDaemon = await daemon(bob, { ...options, log: pino({ base: undefined }, pino.destination({ dest: path.join(root, 'bob.log'), sync: true })) });
}

/** Asks gateway A's agent (as a person on its A2A channel) to get a sum done, and returns the Baton task it made. */
async function askA(a: number, b: number, mode: string): Promise<string> {
  const reply = await sayToAgent(gatewayA.url, `${tokenA}-person`, `Get ${a} + ${b} done by a math agent (${mode})`);
  const id = /Baton task ([0-9a-f-]{36})/.exec(reply)?.[1];
  if (!id) throw new Error(`gateway A's agent did not hand the work over: ${reply}`);
  return id;
}

beforeAll(async () => {
  const runtime = openclawRuntime();
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-openclaw-'));
  model = await scriptedModel(script);
  [alice, bob] = await Promise.all([newAgent('alice-claw'), newAgent('bob-claw', { capabilities: ['math'] })]);
  const [portA, portB] = [await freePort(), await freePort()];
  // `baton a2a`, which gateway A's channel also reaches as an outbound peer: a message to a2a:baton-math
  // is a broadcast to the capability, sent as A's Baton agent.
  a2a = await startA2AServer({ url: stack.SUPABASE_URL, ...agentKey(stack), directory: admin.db, log: silentLogger });
  gatewayA = new Gateway(runtime, {
    name: 'a', dir: path.join(root, 'a'), port: portA, modelUrl: model.url, model: 'gateway-a', env: batonEnv(alice),
    peers: {
      baton: { token: tokenA },
      person: { token: `${tokenA}-person` },
      'baton-math': { token: crypto.randomBytes(24).toString('hex'), url: `${a2a.url}/capabilities/math/`, outboundToken: alice.token },
    },
  });
  gatewayB = new Gateway(runtime, {
    name: 'b', dir: path.join(root, 'b'), port: portB === portA ? await freePort([portA]) : portB, modelUrl: model.url, model: 'gateway-b', env: batonEnv(bob),
    peers: { baton: { token: tokenB } },
  });
  // The skill, where OpenClaw loads shared skills ($OPENCLAW_STATE_DIR/skills), as a user installs it.
  for (const gateway of [gatewayA, gatewayB]) {
    const installed = await baton(['skill', 'install', '--openclaw'], { OPENCLAW_STATE_DIR: gateway.stateDir });
    expect(installed.stdout).toContain(path.join(gateway.stateDir, 'skills', 'baton'));
  }
  // How OpenClaw lists it, asked before the gateway runs (a running gateway answers with its own environment).
  const skillListed = async (env: Record<string, string | undefined> = {}) => {
    const out = await gatewayA.cli(['skills', 'list', '--json'], env);
    return (JSON.parse(out.slice(out.indexOf('{'))) as { skills: Array<{ name: string }> }).skills.find((s) => s.name === 'baton');
  };
  listed = {
    ready: await skillListed(),
    withoutToken: await skillListed({ BATON_AGENT_TOKEN: undefined }),
    withoutBaton: await skillListed({ PATH: [gatewayA.runtimeBin, '/usr/bin', '/bin'].join(path.delimiter) }),
  };
  await Promise.all([gatewayA.start(), gatewayB.start()]);
  // A's daemon tells gateway A's agent what became of the work it handed over.
  const file = path.join(root, 'alice.agent.json');
  fs.writeFileSync(file, JSON.stringify({ tell: { openclaw: gatewayA.url, tokenEnv: 'ALICE_OPENCLAW_TOKEN' } }));
  process.env.ALICE_OPENCLAW_TOKEN = tokenA;
  // Its log, and the teller's, kept in the test's folder, for what a failure says.
  const aliceLog = pino({ base: undefined }, pino.destination({ dest: path.join(root, 'alice.log'), sync: true }));
  const { every: _every, ...options } = await loadAgentFile(file, aliceLog);
  await daemon(alice, { ...options, log: aliceLog });
  await startBob();
}, 600_000);

afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
  await Promise.all([gatewayA?.stop(), gatewayB?.stop()]);
  await a2a?.close();
  await model?.close();
  if (root && process.env.KEEP_OPENCLAW) fs.writeFileSync(path.join(root, 'turns.json'), JSON.stringify(model.turns.map(({ system: _s, ...t }) => t), null, 1));
  else if (root) fs.rmSync(root, { recursive: true, force: true });
});

const toldA = (taskId: string, words: string) => model.turns.some((t) => t.model === 'gateway-a' && t.inbound.includes(taskId) && t.inbound.includes(words));

/** Waits for A's agent to be told `words` about a task; a failure says what A's daemon and gateway A did. */
const waitToldA = (taskId: string, words: string, what: string) => eventually(async () => toldA(taskId, words), 90_000, what)
  .catch((err: Error) => {
    const turns = model.turns.filter((t) => t.model === 'gateway-a').map((t) => t.inbound.slice(0, 200));
    throw new Error(`${err.message}: ${JSON.stringify({ turns, daemon: fs.readFileSync(path.join(root, 'alice.log'), 'utf8').slice(-4000), gateway: gatewayA.log().slice(-4000) }, null, 1)}`);
  });

describe('Baton between OpenClaw gateways', () => {
  it('hands work from gateway A\'s agent to a capability, done by gateway B\'s agent, with the result told to A', async () => {
    const id = await askA(2, 3, 'plain');
    const done = await eventually(async () => { const t = await alice.client.getTask(id); return t.status === 'completed' && t; }, 90_000, 'the task to complete');
    expect(done).toMatchObject({ from_agent: alice.id, claimed_by: bob.id, required_capabilities: ['math'] });
    expect(done.result?.summary).toBe('The sum is 5.');
    // Gateway B's agent got the task as one conversation of its own, with the skill offered.
    const worked = model.turns.filter((t) => t.model === 'gateway-b' && t.inbound.startsWith(`Baton task ${id}`));
    expect(worked.length).toBeGreaterThan(0);
    expect(worked[0]!.system).toContain('<name>baton</name>');
    // A's agent is told, without asking.
    await waitToldA(id, 'is completed', 'gateway A\'s agent to be told the result');
    expect(model.turns.find((t) => t.model === 'gateway-a' && t.inbound.includes(id) && t.inbound.includes('is completed'))!.inbound).toContain('The sum is 5.');
  }, 240_000);

  it('keeps the work while gateway B and its daemon are down, and has it done once when they are back', async () => {
    await bobDaemon!.stop({ graceSeconds: 0 });
    await gatewayB.stop();
    const id = await askA(20, 22, 'plain');
    await new Promise((r) => setTimeout(r, 3000));
    expect((await alice.client.getTask(id)).status).toBe('pending');
    await gatewayB.start();
    await startBob();
    const done = await eventually(async () => { const t = await alice.client.getTask(id); return t.status === 'completed' && t; }, 120_000, 'the task to complete after the restart');
    expect(done.result?.summary).toBe('The sum is 42.');
    // Claimed by the daemon that came back and sent to gateway B's agent once per claim. A claim is
    // followed by another only when the gateway failed its turn (OpenClaw's own state database, busy
    // under load, has failed a turn right after a restart) or could not be reached yet: the task goes
    // again, as it should (handed back, not counted, in the second case).
    const events = await alice.client.events(id);
    const workTurns = model.turns.filter((t) => t.model === 'gateway-b' && t.inbound.startsWith(`Baton task ${id}`) && t.toolResults.length === 0);
    const claims = events.filter((e) => e.from_status === 'pending');
    const requeued = events.filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending');
    const seen = JSON.stringify({ events, workTurns: workTurns.length, gatewayB: gatewayB.log().slice(-4000) }, null, 1);
    expect(claims.every((e) => e.actor === bob.id), seen).toBe(true);
    expect(requeued, seen).toHaveLength(claims.length - 1);
    for (const e of requeued) expect(e.note, seen).toMatch(/^(retry after attempt \d+ of \d+: the OpenClaw (agent at \S+ failed the task|gateway at \S+ did not answer for the task)|handed back: could not reach the OpenClaw gateway)/);
    expect(done.attempts, seen).toBe(requeued.filter((e) => e.note!.startsWith('retry after')).length + 1);
    expect(workTurns.length, seen).toBeGreaterThanOrEqual(1);
    expect(workTurns.length, seen).toBeLessThanOrEqual(claims.length);
    if (claims.length > 1) console.log(`gateway B failed a turn after its restart; the task went again:\n${seen}`);
  }, 300_000);

  it('has the work done again when gateway B crashes while its agent works on it', async () => {
    const id = await askA(6, 7, 'slow');
    const working = (t: Turn) => t.model === 'gateway-b' && t.inbound.startsWith(`Baton task ${id}`) && t.toolResults.length === 0;
    await eventually(async () => model.turns.some(working), 90_000, 'gateway B\'s agent to be working on the task');
    await gatewayB.crash();
    await gatewayB.start();
    slow.release();
    const done = await eventually(async () => { const t = await alice.client.getTask(id); return t.status === 'completed' && t; }, 180_000, 'the task to complete after the crash')
      .catch(async (err: Error) => { throw new Error(`${err.message}: ${JSON.stringify({ task: await alice.client.getTask(id), events: await alice.client.events(id), log: gatewayB.log().slice(-3000), daemon: fs.readFileSync(path.join(root, 'bob.log'), 'utf8').slice(-4000) }, null, 1)}`); });
    expect(done.result?.summary).toBe('The sum is 13.');
    // The run the crash took counts as an attempt and goes again; while the gateway was away, the daemon
    // handed the task back without counting them, so the task did not run out of attempts.
    const events = await alice.client.events(id);
    const requeued = events.filter((e) => e.from_status === 'in_progress' && e.to_status === 'pending');
    const seen = JSON.stringify({ events, log: gatewayB.log().slice(-3000) }, null, 1);
    const retried = requeued.filter((e) => /^retry after attempt \d+ of \d+: /.test(e.note ?? ''));
    const handedBack = requeued.filter((e) => /^handed back: could not reach the OpenClaw gateway at /.test(e.note ?? ''));
    expect(retried.length + handedBack.length, seen).toBe(requeued.length);
    // (Under load, a run may first meet the restarted gateway still finding the crashed one's state lock:
    // "another OpenClaw process owns state-lifecycle", a failed attempt like any other.)
    expect(retried.map((e) => e.note).join('\n'), seen).toMatch(/the OpenClaw gateway at \S+ (did not answer for the task|no longer knows its run of the task)|lost the OpenClaw gateway/);
    expect(done.attempts, seen).toBe(retried.length + 1);
    expect(events.filter((e) => e.from_status === 'pending').every((e) => e.actor === bob.id), seen).toBe(true);
    // B's agent worked on it in the run the crash took and in the one that did it (a run the gateway failed
    // at its start, as after the restart above, never reached the agent). OpenClaw's own restart recovery
    // may replay the interrupted turn once more (its reply goes nowhere: the A2A call that asked is gone).
    expect(model.turns.filter(working).length, seen).toBeGreaterThanOrEqual(2);
    expect(model.turns.filter(working).length, seen).toBeLessThanOrEqual(done.attempts + 1);
  }, 360_000);

  it('carries B\'s question to A\'s agent and A\'s answer back into B\'s conversation', async () => {
    const id = await askA(2, 3, 'ask');
    await waitToldA(id, 'Which unit?', 'gateway A\'s agent to be asked');
    const done = await eventually(async () => { const t = await alice.client.getTask(id); return t.status === 'completed' && t; }, 90_000, 'the answered task to complete');
    expect(done.result?.summary).toBe('The sum is 5 metres.');
    const [question] = await alice.client.messages({ taskId: id, kind: 'question' });
    const [answer] = await alice.client.messages({ taskId: id, kind: 'answer' });
    expect(question).toMatchObject({ from_agent: bob.id, body: { text: 'Which unit?' } });
    expect(answer).toMatchObject({ from_agent: alice.id, body: { text: 'in metres' } });
    await waitToldA(id, 'is completed', 'gateway A\'s agent to be told the result');
  }, 300_000);

  it('takes work from gateway A\'s outbound A2A peer (baton a2a), sent as A\'s Baton agent, and tells A the result', async () => {
    const sent = JSON.parse(await gatewayA.cli(['message', 'send', '--channel', 'a2a', '--target', 'baton-math', '--message', 'Sum 4 and 5 (plain)', '--json'])) as Record<string, unknown>;
    const task = await eventually(async () => (await alice.client.listTasks({ box: 'sent', limit: 50 })).find((t) => t.title === 'Sum 4 and 5 (plain)'), 30_000, 'the task from the outbound peer');
    expect(JSON.stringify(sent)).toContain(task.id);
    expect(task).toMatchObject({ from_agent: alice.id, required_capabilities: ['math'] });
    const done = await eventually(async () => { const t = await alice.client.getTask(task.id); return t.status === 'completed' && t; }, 90_000, 'the task to complete');
    expect(done.result?.summary).toBe('The sum is 9.');
    await waitToldA(task.id, 'is completed', 'gateway A\'s agent to be told the result');
  }, 240_000);

  it('fails the attempt when B\'s model answers 500 and then 400, never taking OpenClaw\'s words as the result, then has it done', async () => {
    const attempts = async (id: string, n: number) => eventually(async () => {
      const events = await alice.client.events(id);
      return events.filter((e) => e.to_status === 'pending' && e.note).length >= n;
    }, 120_000, `attempt ${n} to fail`);
    providerB.failing = 500;
    const id = await askA(4, 4, 'plain');
    try {
      await attempts(id, 1);
      providerB.failing = 400;
      await attempts(id, 2);
    } finally {
      providerB.failing = undefined;
    }
    const done = await eventually(async () => { const t = await alice.client.getTask(id); return ['completed', 'failed'].includes(t.status) ? t : undefined; }, 120_000, 'the task to finish');
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.result?.summary).toBe('The sum is 8.');
    expect(done.attempts).toBe(3);
    const notes = (await alice.client.events(id)).filter((e) => e.to_status === 'pending' && e.note).map((e) => e.note).join('\n');
    expect(notes).toMatch(/failed the task/);
  }, 360_000);

  it('gets the work done when B\'s model is rate-limited (429) for a while, never taking the error for a result', async () => {
    Object.assign(providerB, { failing: 429, times: 3 });
    try {
      const id = await askA(6, 6, 'plain');
      const done = await eventually(async () => { const t = await alice.client.getTask(id); return ['completed', 'failed'].includes(t.status) ? t : undefined; }, 240_000, 'the task to finish');
      const events = await alice.client.events(id);
      const seen = JSON.stringify({ events, log: gatewayB.log().slice(-3000) }, null, 1);
      expect(done.status, seen).toBe('completed');
      expect(done.result?.summary, seen).toBe('The sum is 12.');
      expect(providerB.times, seen).toBe(0);
      // Whether OpenClaw retried the request itself or gave the attempt up to Baton's retry, the limit's
      // words never became a result, and every attempt that failed says why.
      const notes = events.filter((e) => e.to_status === 'pending' && e.note).map((e) => e.note ?? '');
      expect(notes.join('\n'), seen).not.toMatch(/The sum is/);
      expect(done.attempts, seen).toBe(notes.filter((n) => /^retry after attempt/.test(n)).length + 1);
    } finally {
      Object.assign(providerB, { failing: undefined, times: undefined });
    }
  }, 360_000);

  it('hands work back, costing no attempt, while B\'s daemon holds a peer token the gateway refuses', async () => {
    const carol = await newAgent('carol-claw', { capabilities: ['math-wrong-token'] });
    const file = path.join(root, 'carol.agent.json');
    fs.writeFileSync(file, JSON.stringify({ capabilities: ['math-wrong-token'], executors: { '*': { openclaw: gatewayB.url, tokenEnv: 'CAROL_OPENCLAW_TOKEN' } } }));
    process.env.CAROL_OPENCLAW_TOKEN = 'not-the-peer-token';
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({ write(chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb(); } });
    const { every: _every, ...options } = await loadAgentFile(file);
    await daemon(carol, { ...options, log: pino({ base: undefined }, sink) });
    const task = await alice.client.handoff({ to: carol.id, title: 'Sum 1 and 1 (plain)', maxAttempts: 1 });
    const released = await eventually(async () => lines.find((l) => /^released/.test(String(l.msg))), 90_000, 'the hand-back');
    expect(String(released.reason)).toMatch(/refused Baton's peer token/);
    const now = await alice.client.getTask(task.id);
    expect(now.status).not.toBe('failed');
    await alice.client.cancel(task.id, 'the test is done with it');
  }, 120_000);

  it('ships a skill that skills-ref validates and OpenClaw lists as ready only with baton and its settings', async () => {
    const skill = path.join(gatewayA.stateDir, 'skills', 'baton');
    const validator = path.join(import.meta.dirname, '..', 'node_modules', 'skills-ref', 'dist', 'cli.js');
    const { stdout } = await run(process.execPath, [validator, 'validate', skill]);
    expect(stdout).toContain('Valid skill');
    expect(listed.ready).toMatchObject({ eligible: true, source: 'openclaw-managed' });
    expect(listed.withoutToken).toMatchObject({ eligible: false, missing: { env: ['BATON_AGENT_TOKEN'] } });
    expect(listed.withoutBaton).toMatchObject({ eligible: false, missing: { bins: ['baton'] } });
  }, 120_000);
});
