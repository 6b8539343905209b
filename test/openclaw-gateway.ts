/**
 * Real OpenClaw gateways for tests, and the one double: a scripted OpenAI-compatible model server that
 * stands in for the LLM (no model can be reached here). The script sees what the gateway's agent was
 * told and the results of the tools it ran, and answers with text or with one `exec` call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
// @ts-expect-error: a plain ES module of the scripts folder, without types
import { ensureRuntime } from '../scripts/openclaw-runtime.mjs';
import { cliPath } from './cli.js';

export interface Runtime { dir: string; nodeBin: string; openclaw: string }
export const openclawRuntime = (): Runtime => ensureRuntime() as Runtime;

/** One call of a gateway's agent to the model: who it is, what it was last told, what its tools gave since. */
export interface Turn {
  /** The model id the gateway asks for: the test gives each gateway its own. */
  model: string;
  /** The text of the latest inbound message of the conversation. */
  inbound: string;
  /** The outputs of the tools run since that message, oldest first. */
  toolResults: string[];
  /** The whole system prompt (the skills the gateway offers are listed in it). */
  system: string;
}
export type Action = { text: string } | { exec: string } | { status: number; error: string };

interface ChatMessage { role: string; content?: unknown; tool_calls?: unknown[] }

const contentText = (content: unknown): string => (typeof content === 'string' ? content
  : Array.isArray(content) ? content.map((c) => (typeof c === 'object' && c && 'text' in c ? String((c as { text: unknown }).text) : '')).join('') : '');

const queued = /^\[[^\]]*\] \[Queued user message from a previous active turn[^\]]*\]\n/;

/** The turn as the script sees it: the inbound text is the user message between the sender block and "Runtime:". */
function turnOf(body: { model: string; messages: ChatMessage[] }): Turn {
  const { messages } = body;
  let at = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = contentText(messages[i]!.content);
    // The inbound message itself, not the internal context OpenClaw adds after it (which quotes it).
    // When OpenClaw retries a turn its provider refused (a 429), it sends the message again marked as
    // queued from the turn before, without its sender block.
    if (messages[i]!.role === 'user' && (text.includes('Conversation info') || queued.test(text)) && !text.includes('<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>')) { at = i; break; }
  }
  const raw = at >= 0 ? contentText(messages[at]!.content) : '';
  const inbound = (queued.test(raw) ? raw.replace(queued, '') : raw.replace(/^[\s\S]*?```json[\s\S]*?```\s*/, ''))
    .replace(/\n+Runtime: [\s\S]*$/, '').trim();
  const toolResults = messages.slice(at + 1).filter((m) => m.role === 'tool').map((m) => contentText(m.content));
  return { model: body.model, inbound, toolResults, system: contentText(messages.find((m) => m.role === 'system')?.content) };
}

/** Serves /v1/chat/completions (streamed or not) by the script; every turn is kept in `turns`. */
export async function scriptedModel(script: (turn: Turn) => Action | Promise<Action>) {
  const turns: Turn[] = [];
  let calls = 0;
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (!req.url?.endsWith('/chat/completions')) {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ object: 'list', data: [] }));
    }
    const body = JSON.parse(raw) as { model: string; messages: ChatMessage[]; stream?: boolean };
    const turn = turnOf(body);
    turns.push(turn);
    let action: Action;
    try {
      action = await script(turn);
    } catch (err) {
      action = { text: `the script failed: ${(err as Error).message}` };
    }
    if ('status' in action) {
      res.writeHead(action.status, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: action.error, type: action.status >= 500 ? 'server_error' : 'invalid_request_error', code: null } }));
    }
    const id = `call_${++calls}`;
    const message = 'exec' in action
      ? { role: 'assistant', content: null, tool_calls: [{ index: 0, id, type: 'function', function: { name: 'exec', arguments: JSON.stringify({ command: action.exec, title: 'baton' }) } }] }
      : { role: 'assistant', content: action.text };
    const finish = 'exec' in action ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };
    const base = { id: `chatcmpl-${calls}`, created: Math.floor(Date.now() / 1000), model: body.model };
    if (!body.stream) {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: unknown, finishReason: string | null, extra = {}) =>
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`);
    chunk(message, null);
    chunk({}, finish, { usage });
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, turns, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/**
 * Stops a process the test started, by its pid (its whole process group with `group`): SIGTERM, then
 * SIGKILL after 30 s.
 */
export async function stopProcess(child: ChildProcess | undefined, { group = false } = {}): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const signal = (name: NodeJS.Signals) => (group ? process.kill(-child.pid!, name) : child.kill(name));
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/**
 * The openclaw.json of a gateway that is set up already: its port (loopback, no auth), its log file, the
 * scripted model as its agent's model, `exec` allowed. Channels are the caller's.
 */
export function gatewayConfig({ port, log, model, modelUrl }: { port: number; log: string; model: string; modelUrl: string }) {
  return {
    gateway: { port, mode: 'local', bind: 'loopback', auth: { mode: 'none' } },
    logging: { file: log },
    agents: { defaults: { model: { primary: `scripted/${model}` } } as { model: { primary: string }; workspace?: string } },
    tools: { exec: { mode: 'full' } },
    // No browser: its control and CDP ports derive from the gateway's, and two gateways side by side collide.
    browser: { enabled: false },
    models: {
      mode: 'merge',
      providers: {
        scripted: {
          baseUrl: modelUrl, apiKey: 'scripted-local', api: 'openai-completions',
          models: [{ id: model, name: model, reasoning: false, input: ['text'], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 64000, maxTokens: 4096 }],
        },
      },
    },
  };
}

/**
 * Says `text` to a gateway's agent as a person on its A2A channel (a peer with `token`) and returns the
 * agent's reply. A turn the gateway itself failed (under load, or while it runs its start-up maintenance,
 * OpenClaw's own state database can be busy: "another OpenClaw process owns state-lifecycle") is said
 * again, as a person would, up to three times in all.
 */
export async function sayToAgent(url: string, token: string, text: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const reply = await fetch(`${url}/a2a/v1`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] } } }),
    }).then((r) => r.json()) as { result?: { task?: { status?: { state?: string }; artifacts?: Array<{ parts: Array<{ text?: string }> }> } } };
    const state = reply.result?.task?.status?.state;
    if (state === 'TASK_STATE_FAILED' && attempt < 3) continue;
    if (state !== 'TASK_STATE_COMPLETED') throw new Error(`the gateway's agent did not answer: ${JSON.stringify(reply)}`);
    return reply.result?.task?.artifacts?.[0]?.parts[0]?.text ?? '';
  }
}

export interface GatewaySpec {
  name: string;
  dir: string;
  port: number;
  modelUrl: string;
  /** The model id this gateway asks the scripted model for. */
  model: string;
  /** A2A peers: name → token (and url/outboundToken for outbound messages). */
  peers: Record<string, { token: string; url?: string; outboundToken?: string }>;
  /** The environment of the gateway, which its agent's shell inherits (Baton's settings). */
  env: Record<string, string>;
}

/** An OpenClaw gateway in a folder of its own (config, state, workspace, log), started and stopped by pid. */
export class Gateway {
  private child: ChildProcess | undefined;
  readonly url: string;
  readonly configPath: string;
  readonly stateDir: string;
  readonly workspace: string;
  readonly binDir: string;

  /** Where the runtime's node is, for a PATH without the gateway's own bin folder. */
  get runtimeBin(): string {
    return this.runtime.nodeBin;
  }

  constructor(private readonly runtime: Runtime, readonly spec: GatewaySpec) {
    this.url = `http://127.0.0.1:${spec.port}`;
    this.configPath = path.join(spec.dir, 'openclaw.json');
    this.stateDir = path.join(spec.dir, 'state');
    this.workspace = path.join(spec.dir, 'workspace');
    this.binDir = path.join(spec.dir, 'bin');
    for (const d of [this.stateDir, this.workspace, this.binDir]) fs.mkdirSync(d, { recursive: true });
    // `baton` on the agent's PATH: the CLI under test, on the Node that runs the suite.
    fs.writeFileSync(path.join(this.binDir, 'baton'), `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`, { mode: 0o755 });
    const config = gatewayConfig({ port: spec.port, log: path.join(spec.dir, 'gateway.log'), model: spec.model, modelUrl: spec.modelUrl });
    config.agents.defaults.workspace = this.workspace;
    fs.writeFileSync(this.configPath, JSON.stringify({ ...config, channels: { a2a: { enabled: true, rateLimitPerMinute: 0, peers: spec.peers } } }, null, 2));
  }

  /** The environment every openclaw command of this gateway runs with. */
  env(): NodeJS.ProcessEnv {
    // Not the test runner's own variables: OpenClaw is tested with vitest too, and reads them.
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(VITEST|NODE_OPTIONS$|TEST$)/.test(k)));
    return {
      ...inherited, ...this.spec.env,
      HOME: this.spec.dir, OPENCLAW_CONFIG_PATH: this.configPath, OPENCLAW_STATE_DIR: this.stateDir,
      PATH: [this.binDir, this.runtime.nodeBin, process.env.PATH].join(path.delimiter), NO_COLOR: '1',
    };
  }

  /** Runs `openclaw <args>` for this gateway (its environment changed by `env`; undefined unsets) and returns its stdout. */
  async cli(args: string[], env: Record<string, string | undefined> = {}): Promise<string> {
    const merged = Object.fromEntries(Object.entries({ ...this.env(), ...env }).filter(([, v]) => v !== undefined));
    const child = spawn(path.join(this.runtime.nodeBin, 'node'), [this.runtime.openclaw, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`openclaw ${args.join(' ')} exited ${code}: ${err || out}`);
    return out;
  }

  /** Starts the gateway and waits until its A2A card answers. */
  async start(): Promise<void> {
    const log = fs.openSync(path.join(this.spec.dir, 'stdout.log'), 'a');
    // A process group of its own, so that a crash takes the gateway's helpers (its spawn broker) down with it.
    this.child = spawn(path.join(this.runtime.nodeBin, 'node'), [this.runtime.openclaw, 'gateway', 'run', '--port', String(this.spec.port)], {
      env: this.env(), stdio: ['ignore', log, log], detached: true,
    });
    fs.closeSync(log);
    const child = this.child;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`gateway ${this.spec.name} exited ${child.exitCode}: ${this.log().slice(-2000)}`);
      const up = await fetch(`${this.url}/.well-known/agent-card.json`).then((r) => r.ok, () => false);
      if (up) return;
      if (Date.now() > deadline) throw new Error(`gateway ${this.spec.name} did not answer within 120 s: ${this.log().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** Stops the gateway it started. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    await stopProcess(child);
  }

  /** Kills the gateway and its helpers at once (SIGKILL to its process group), as a crash or a power cut would. */
  async crash(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid, 'SIGKILL');
    await exited;
  }

  log(): string {
    return ['stdout.log'].map((f) => { try { return fs.readFileSync(path.join(this.spec.dir, f), 'utf8'); } catch { return ''; } }).join('\n');
  }
}
