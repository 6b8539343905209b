/**
 * docs/openclaw.md followed from its first command to its last, on this one host: a local stack of the
 * test's own in an operator's folder, and two "machines" (two home folders), each with an OpenClaw
 * gateway already running with its A2A channel, as the page assumes. Every shell block of the page's
 * steps is run by bash as written, and the JSON block is saved where the page says. What a person does
 * by hand, the test does: it copies each agent's .env to its machine, saves the JSON file, drops what
 * the page says machine A can drop, asks gateway A's agent in a channel (its A2A channel, as a person
 * peer) and is the service manager that `openclaw gateway restart` talks to (no systemd here: the
 * `openclaw` on the machines' PATH asks the test to restart the gateway). OpenClaw's default port 18789
 * is each gateway's free port. A scripted model stands in for the LLM, as in openclaw.test.ts.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/stack/ports.js';
import { cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { removeStackFolder } from './global-setup.js';
import { gatewayConfig, openclawRuntime, sayToAgent, scriptedModel, stopProcess, type Action, type Runtime, type Turn } from './openclaw-gateway.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const page = fs.readFileSync(path.join(root, 'docs', 'openclaw.md'), 'utf8');
const steps = page.slice(page.indexOf('## Ten minutes, step by step'), page.indexOf('## What happens when'));
/** The fenced blocks of the steps, in order: [language, text]. */
const blocks = [...steps.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!] as const);
const shellBlocks = blocks.filter(([lang]) => lang === 'sh').map(([, text]) => text);
const jsonBlock = blocks.find(([lang]) => lang === 'json')![1];
const toldBlock = blocks.find(([lang]) => lang === '')![1];
/** What the person says to gateway A's agent, and the command the page says the agent runs. */
const request = /Ask gateway A's agent, in any of its channels: "([^"]+)"/.exec(steps)![1]!;
const command = /With the\s+skill, it runs `([^`]+)`/.exec(steps)![1]!;
const title = /"([^"]+)"/.exec(command)![1]!;
/** The HEARTBEAT.md line's command, and the outbound peer's two blocks (serving `baton a2a`, machine A's peer). */
const tick = /```markdown\n[\s\S]*?Run `(baton agent tick [^`]+)`/.exec(page)![1]!;
const outbound = page.slice(page.indexOf('## Through OpenClaw\'s own outbound peer'), page.indexOf('## OpenClaw\'s A2A channel and'));
const [serveA2A, outboundPeer] = [...outbound.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!) as [string, string];
const sentOutbound = /-m "([^"]+)"/.exec(outboundPeer)![1]!;

/** What the page shows A's agent is told, for a task of this title and summary; the task id is captured. */
function toldPattern(taskTitle: string, summary: string): RegExp {
  const shown = toldBlock.trim().replaceAll(title, taskTitle).replace(/The sum is \d+\./, summary);
  return new RegExp(shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('1f6c…', '([0-9a-f-]{36})'));
}

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; stdout: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, timeout: 240_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) || 1 : 0, out: stdout + stderr, stdout }));
  });
}

const background: ChildProcess[] = [];

/** A long-running line of the page (a daemon, a server), in a process group of its own, stopped in afterAll. */
function inBackground(block: string, cwd: string, env: NodeJS.ProcessEnv, logFile: string): void {
  const log = fs.openSync(logFile, 'a');
  background.push(spawn('bash', ['-euo', 'pipefail', '-c', block], { cwd, env, stdio: ['ignore', log, log], detached: true }));
  fs.closeSync(log);
}

async function stopBackground(): Promise<void> {
  await Promise.all(background.map((child) => stopProcess(child, { group: true })));
}

/** The model's part: A's agent runs the page's command when asked; B's agent sums what it is given. */
function script(turn: Turn): Action {
  if (turn.model === 'guide-a') {
    if (turn.inbound.startsWith(request)) return turn.toolResults.length ? { text: `Done: ${turn.toolResults.at(-1)}` } : { exec: command };
    return { text: 'Noted.' };
  }
  const task = /^Baton task \S+ from \S+: Sum (\d+) and (\d+)/.exec(turn.inbound);
  return { text: task ? `The sum is ${Number(task[1]) + Number(task[2])}.` : 'Nothing to do.' };
}

/**
 * One machine: a home folder whose ~/.openclaw holds a gateway already set up (its model, its port, its
 * A2A channel with a person peer), `baton` and `openclaw` on the PATH, and the gateway kept running the
 * way a service manager would, restarted when `openclaw gateway restart` asks.
 */
class Machine {
  readonly home: string;
  readonly bin: string;
  readonly personToken = crypto.randomBytes(16).toString('hex');
  private gateway: ChildProcess | undefined;

  constructor(private readonly runtime: Runtime, readonly name: 'a' | 'b', dir: string, readonly port: number, modelUrl: string) {
    this.home = path.join(dir, `machine-${name}`);
    this.bin = path.join(this.home, 'bin');
    fs.mkdirSync(path.join(this.home, '.openclaw'), { recursive: true });
    fs.mkdirSync(this.bin);
    const node = path.join(runtime.nodeBin, 'node');
    fs.writeFileSync(path.join(this.bin, 'baton'), `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`, { mode: 0o755 });
    // The service manager's side of `openclaw gateway restart`: a request file the test answers by
    // stopping the gateway and starting it again; the command returns once the new one answers.
    fs.writeFileSync(path.join(this.bin, 'openclaw'), `#!/bin/sh
if [ "$1 $2" = "gateway restart" ]; then
  rm -f "$HOME/.restarted"; touch "$HOME/.restart"
  i=0; while [ ! -e "$HOME/.restarted" ]; do i=$((i+1)); [ $i -gt 600 ] && { echo "the gateway did not restart" >&2; exit 1; }; sleep 0.5; done
  echo "Gateway restarted."; exit 0
fi
exec "${node}" "${runtime.openclaw}" "$@"
`, { mode: 0o755 });
    // Its log in the machine's folder, not OpenClaw's default /tmp/openclaw; a person peer on its A2A channel.
    const config = gatewayConfig({ port, log: path.join(this.home, 'openclaw.log'), model: `guide-${name}`, modelUrl });
    fs.writeFileSync(path.join(this.home, '.openclaw', 'openclaw.json'), JSON.stringify({ ...config, channels: { a2a: { enabled: true, peers: { person: { token: this.personToken } } } } }, null, 2));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What a login shell on the machine has: its home, and `baton` and `openclaw` on the PATH. No Baton settings. */
  env(): NodeJS.ProcessEnv {
    return { HOME: this.home, PATH: [this.bin, process.env.PATH].join(path.delimiter), NO_COLOR: '1', LANG: 'C.UTF-8' };
  }

  /** Runs a block of the page on this machine, in its home folder, as the person would. */
  run(block: string): Promise<{ code: number; out: string; stdout: string }> {
    return bash(block, this.home, this.env());
  }

  async startGateway(): Promise<void> {
    const log = fs.openSync(path.join(this.home, 'gateway.out'), 'a');
    const child = spawn(path.join(this.runtime.nodeBin, 'node'), [this.runtime.openclaw, 'gateway', 'run'], { env: this.env(), cwd: this.home, stdio: ['ignore', log, log] });
    fs.closeSync(log);
    this.gateway = child;
    const deadline = Date.now() + 120_000;
    while (!(await fetch(`${this.url}/.well-known/agent-card.json`).then((r) => r.ok, () => false))) {
      if (child.exitCode !== null) throw new Error(`gateway ${this.name} exited ${child.exitCode}: ${this.log().slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`gateway ${this.name} did not answer within 120 s: ${this.log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  async stopGateway(): Promise<void> {
    const child = this.gateway;
    this.gateway = undefined;
    await stopProcess(child);
  }

  /** Runs a block of the page on this machine, answering `openclaw gateway restart` while it runs. */
  async runServed(block: string): Promise<{ code: number; out: string; stdout: string }> {
    let running = true;
    const serve = (async () => {
      while (running) {
        if (fs.existsSync(path.join(this.home, '.restart'))) {
          fs.rmSync(path.join(this.home, '.restart'));
          await this.stopGateway();
          await this.startGateway();
          fs.writeFileSync(path.join(this.home, '.restarted'), '');
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    try {
      return await this.run(block);
    } finally {
      running = false;
      await serve;
    }
  }

  /** Runs the page's daemon line in the background, as systemd or tmux would. */
  startDaemon(block: string): void {
    inBackground(block, this.home, this.env(), path.join(this.home, 'daemon.out'));
  }

  async stop(): Promise<void> {
    await this.stopGateway();
  }

  log(): string {
    return ['gateway.out', 'daemon.out'].map((f) => { try { return `--- ${f}\n${fs.readFileSync(path.join(this.home, f), 'utf8')}`; } catch { return ''; } }).join('\n');
  }
}

let dir: string;
let operatorEnv: NodeJS.ProcessEnv;
let model: Awaited<ReturnType<typeof scriptedModel>>;
let machines: Machine[] = [];

beforeAll(async () => {
  const runtime = openclawRuntime();
  dir = fs.mkdtempSync(path.join(root, '.openclaw-guide-'));
  fs.chmodSync(dir, 0o755);
  model = await scriptedModel(script);
  const apiPort = await freePort();
  const dbPort = await freePort([apiPort]);
  const [portA, portB] = [await freePort([apiPort, dbPort]), await freePort([apiPort, dbPort])];
  machines = [new Machine(runtime, 'a', dir, portA, model.url), new Machine(runtime, 'b', dir, portB, model.url)];
  operatorEnv = { HOME: dir, PATH: [machines[0]!.bin, process.env.PATH].join(path.delimiter), NO_COLOR: '1', BATON_API_PORT: String(apiPort), BATON_DB_PORT: String(dbPort) };
  // "You need a Baton project": a local stack in the operator's folder; and both gateways running.
  const started = await bash('baton stack start', dir, operatorEnv);
  if (started.code !== 0) throw new Error(`baton stack start: ${started.out}`);
  await Promise.all(machines.map((m) => m.startGateway()));
}, 600_000);

afterAll(async () => {
  await stopBackground();
  await Promise.all(machines.map((m) => m.stop()));
  await model?.close();
  if (dir) {
    await bash('baton stack stop || true', dir, operatorEnv);
    removeStackFolder(dir);
  }
}, 120_000);

describe('docs/openclaw.md', () => {
  it('works as written, from the agents\' creation to the result told to gateway A\'s agent', async () => {
    const [a, b] = machines as [Machine, Machine];
    const seen = () => machines.map((m) => `=== machine ${m.name}\n${m.log().slice(-4000)}`).join('\n');
    expect(shellBlocks).toHaveLength(4);
    const [create, settings, peer, daemon] = shellBlocks as [string, string, string, string];

    // 1. The operator creates the agents; each .env goes to its machine.
    const created = await bash(create, dir, operatorEnv);
    expect(created.code, created.out).toBe(0);
    fs.copyFileSync(path.join(dir, 'alice.env'), path.join(a.home, 'alice.env'));
    fs.copyFileSync(path.join(dir, 'bob.env'), path.join(b.home, 'bob.env'));

    // 2. and 3. On each machine as written (machine B with bob.env), the gateway restarted when asked.
    const forMachine = (block: string, m: Machine) => (m.name === 'b' ? block.replaceAll('alice.env', 'bob.env') : block);
    for (const m of machines) {
      for (const block of [settings, peer]) {
        const ran = await m.runServed(forMachine(block, m));
        expect(ran.code, `${ran.out}\n${seen()}`).toBe(0);
        // `openclaw skills list`: the skill's row says ready.
        if (block === peer) expect(ran.out.split('\n').find((line) => / baton\s/.test(line)), ran.out).toMatch(/✓ ready/);
      }
    }
    // The agent's token is readable by its owner only, where the daemon reads it and where OpenClaw does.
    for (const file of [path.join(a.home, 'baton', '.env'), path.join(a.home, '.openclaw', '.env')]) expect(fs.statSync(file).mode & 0o077, file).toBe(0);

    // 4. The agent file where the page says (machine A's without capabilities and executors), and the daemon.
    for (const m of machines) {
      const file = JSON.parse(jsonBlock.replaceAll('18789', String(m.port))) as Record<string, unknown>;
      if (m.name === 'a') { delete file.capabilities; delete file.executors; }
      fs.writeFileSync(path.join(m.home, 'baton', 'baton.agent.json'), JSON.stringify(file, null, 2));
      m.startDaemon(daemon);
    }

    // 5. A person asks gateway A's agent.
    const answered = await sayToAgent(a.url, a.personToken, request);
    expect(answered, seen()).toContain(title);
    // A's agent is told, in the words the page shows.
    const told = toldPattern(title, 'The sum is 5.');
    const turn = await eventually(async () => model.turns.find((t) => t.model === 'guide-a' && told.test(t.inbound)), 120_000, `gateway A's agent to be told the result\n${seen()}`);
    const id = told.exec(turn.inbound)![1]!;

    // "Follow it with baton show <task>", on machine A.
    const shown = await a.run(`cd ~/baton && baton show ${id} --json`);
    expect(shown.code, shown.out).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ task: { title, status: 'completed', from_agent: 'alice', claimed_by: 'bob', result: { summary: 'The sum is 5.' } } });
    expect(model.turns.some((t) => t.model === 'guide-b' && t.inbound.startsWith(`Baton task ${id} from alice: ${title}`))).toBe(true);
  }, 600_000);

  it('keeps a bot woken by HEARTBEAT.md going with the line it shows', async () => {
    const b = machines[1]!;
    // The agent's shell on the gateway has ~/.openclaw/.env in its environment.
    const ran = await b.run(`set -a && . ~/.openclaw/.env && set +a && ${tick} && baton inbox`);
    expect(ran.code, ran.out).toBe(0);
  }, 120_000);

  it('takes work from gateway A\'s own outbound peer, served by baton a2a as the page shows', async () => {
    const a = machines[0]!;
    const port = await freePort();
    inBackground(serveA2A.replace('4100', String(port)), dir, operatorEnv, path.join(dir, 'a2a.out'));
    await eventually(async () => fetch(`http://127.0.0.1:${port}/capabilities/math/.well-known/agent-card.json`).then((r) => r.ok, () => false), 60_000, 'baton a2a to serve the capability\'s card');
    const ran = await a.runServed(outboundPeer.replace('baton-host:4100', `127.0.0.1:${port}`));
    expect(ran.code, ran.out).toBe(0);
    const told = toldPattern(sentOutbound, 'The sum is 9.');
    const seen = () => `${a.log().slice(-4000)}\n--- a2a.out\n${fs.readFileSync(path.join(dir, 'a2a.out'), 'utf8').slice(-2000)}`;
    await eventually(async () => model.turns.some((t) => t.model === 'guide-a' && told.test(t.inbound)), 120_000, `gateway A's agent to be told the result\n${seen()}`);
  }, 300_000);
});
