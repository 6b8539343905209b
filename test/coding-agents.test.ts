/**
 * Claude Code, Codex and Gemini CLI doing Baton's work, each the real CLI from npm (installed once into
 * a cache by scripts/coding-agents-runtime.mjs), behind a real daemon on the suite's stack. The one
 * double is the model: a scripted server (model-server.ts) that speaks each CLI's API, decides what the
 * agent does (run a shell command, ask through `baton ask`, answer), and reports what it "spent".
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batonCommand } from '../src/agent/options.js';
import type { Handler } from '../src/contract.js';
import { claude } from '../src/runtimes/claude.js';
import { codex } from '../src/runtimes/codex.js';
import type { CodingAgentOptions } from '../src/runtimes/coding-agent.js';
import { gemini } from '../src/runtimes/gemini.js';
import type { AgentRuntime } from '../src/contract.js';
import type { Task } from '../src/schemas.js';
// @ts-expect-error: a plain JS script
import { ensureCodingAgents } from '../scripts/coding-agents-runtime.mjs';
import { daemon, eventually } from './daemon-helpers.js';
import { cliAs, parsed } from './cli.js';
import { admin, newAgent, stack, untyped, type TestAgent } from './helpers.js';
import { startModelServer, type Entry, type ModelServer, type Reply, type Turn, type Usage } from './model-server.js';

const paths = ensureCodingAgents({ log: () => undefined }) as { claude: string; codex: string; gemini: string };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-coding-'));

interface Cli {
  key: 'claude' | 'codex' | 'gemini';
  runtime: AgentRuntime<Record<string, CodingAgentOptions>>;
  model: string;
  shell: string;
  input(command: string): Record<string, unknown>;
  options(server: ModelServer): Partial<CodingAgentOptions>;
}

const clis: Cli[] = [
  {
    key: 'claude', runtime: claude, model: 'claude-sonnet-4-5', shell: 'Bash',
    input: (command) => ({ command, description: 'run it' }),
    // No retries of its own: the test says which answer fails.
    options: (server) => ({ tools: ['Bash'], env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted', CLAUDE_CODE_MAX_RETRIES: '0' } }),
  },
  {
    key: 'codex', runtime: codex, model: 'gpt-5.1-codex', shell: 'exec_command',
    input: (command) => ({ cmd: command }),
    options: (server) => {
      const home = path.join(scratch, 'codex-home');
      fs.mkdirSync(home, { recursive: true });
      fs.writeFileSync(path.join(home, 'config.toml'), [
        'model = "gpt-5.1-codex"', 'model_provider = "scripted"', '',
        '[model_providers.scripted]', 'name = "scripted"', `base_url = "${server.url}/v1"`, 'wire_api = "responses"', 'env_key = "OPENAI_API_KEY"',
        'request_max_retries = 0', 'stream_max_retries = 0', '',
      ].join('\n'));
      return { env: { CODEX_HOME: home, OPENAI_API_KEY: 'sk-scripted' } };
    },
  },
  {
    key: 'gemini', runtime: gemini, model: 'gemini-2.5-pro', shell: 'run_shell_command',
    input: (command) => ({ command }),
    options: (server) => ({ tools: ['run_shell_command'], model: 'gemini-2.5-pro', env: { GEMINI_API_KEY: 'scripted', GOOGLE_GEMINI_BASE_URL: server.url } }),
  },
];

/** The task a turn works on: the first task id its conversation names. */
const taskOf = (turn: Turn) => /Baton task ([0-9a-f-]{36})/.exec(turn.all)?.[1];
const scenarioOf = (turn: Turn) => /\[s:([a-z0-9-]+)\]/.exec(turn.all)?.[1];
/** The shell commands the agent ran so far in this conversation. */
const ranSoFar = (turn: Turn) => turn.entries.filter((e: Entry) => e.role === 'assistant' && e.tool);

/** Usage the server reported, by task and model, for comparison with what Baton recorded. */
const spentByTask = new Map<string, Map<string, Usage>>();
/** Answers that fail, by task: the next HTTP statuses to answer with. */
const failures = new Map<string, number[]>();
/** Tasks whose key the provider refuses until the test lets it through. */
const refused = new Set<string>();
/** Whether the model still refuses the `fail-first` scenario (the test lets the retry through). */
let brokenUntilRetried = true;

const apis = { anthropic: 'claude', openai: 'codex', gemini: 'gemini' } as const;

function script() {
  return (turn: Turn): Reply => {
    const task = taskOf(turn);
    const scenario = scenarioOf(turn);
    const { shell, input } = clis.find((c) => c.key === apis[turn.api])!;
    const run = (command: string): Reply => ({ tool: shell, input: input(command) });
    if (!task || !scenario) return { text: 'nothing to do' };
    if (refused.has(task)) return { status: 401, error: 'invalid x-api-key' };
    const failing = failures.get(task);
    if (failing?.length) {
      const status = failing.shift()!;
      return { status, error: status === 400 ? 'provider rejected the request' : 'provider internal error' };
    }
    const steps = ranSoFar(turn).length;
    const baton = /run (\S+) in your shell/.exec(turn.all)?.[1] ?? 'baton';
    const answered = turn.entries.find((e) => e.role === 'user' && e.text.includes('Answer from'));
    switch (scenario) {
      case 'artifact':
        return steps === 0 ? run('printf "report for the task" > outputs/report.txt && echo written') : { text: 'Wrote outputs/report.txt.' };
      case 'ask':
        if (answered) return { text: `Using ${/\n\n(.*)\n\nGo on/s.exec(answered.text)?.[1]}; I remember running ${steps} command(s) before.` };
        return steps === 0 ? run(`${baton} ask ${task} "tabs or spaces?"`) : { text: 'I asked the sender; waiting for the answer.' };
      case 'dear':
        // A first turn that spends far more than the task's budget, and asks the sender.
        return steps === 0 ? run(`${baton} ask ${task} "which file?"`) : { text: 'I asked; waiting for the answer.' };
      case 'cancel':
        // Under `timeout`: Claude Code refuses a standalone sleep as its tool's command.
        return steps === 0 ? run(`timeout 400 sleep 300 # marker-${task}`) : { text: 'slept' };
      case 'crash':
        // In the first attempt the test kills the CLI while its tool sleeps; the second finishes.
        if (turn.all.includes('This is attempt 2')) return { text: 'done on attempt 2' };
        return steps === 0 ? run(`exec -a crash-${task} sleep 300`) : { text: 'unreachable' };
      case 'errors':
        return { text: 'worked after the errors' };
      case 'budget': {
        // "[s:budget] step 1 (next: A then: B)": hand step 2 to A (which hands step 3 to B); step 3 is the work.
        const at = /: \[s:budget\] step (\d) \(next: ([a-z0-9-]+)(?: then: ([a-z0-9-]+))?\)/.exec(turn.all);
        if (!at) return { text: 'step 3 done' };
        if (steps > 0) return { text: `handed on step ${Number(at[1]) + 1}` };
        const title = `[s:budget] step ${Number(at[1]) + 1}${at[3] ? ` (next: ${at[3]})` : ''}`;
        return run(`${baton} handoff ${at[2]} "${title}" --parent ${task} --allow-offline --json`);
      }
      case 'bounce': {
        // Hands the work on: at the start to the agent named, then back to whoever sent it.
        if (steps > 0) return { text: 'bounced' };
        const to = /\(next: ([a-z0-9-]+)\)/.exec(turn.all)?.[1] ?? /handed to you by the agent "([^"]+)"/.exec(turn.all)?.[1];
        return run(`${baton} handoff ${to} "[s:bounce] bounce" --parent ${task} --json`);
      }
      case 'part':
        return { text: 'part done' };
      case 'fail-first':
        // Refused by the model until the test lets it through (the retry's run).
        return brokenUntilRetried ? { status: 400, error: 'provider rejected the request' } : { text: 'done on the retry' };
      case 'greedy': {
        // Asks for a bigger budget than its chain has left, and says what Baton answered.
        if (steps > 0) return { text: `Baton said: ${turn.entries.filter((e: Entry) => e.role === 'tool').map((e: Entry) => e.text).join(' ').slice(0, 600)}` };
        return run(`${baton} handoff ${/\(next: ([a-z0-9-]+)\)/.exec(turn.all)?.[1]} "[s:part] more" --parent ${task} --budget-tokens 900M --json`);
      }
      case 'chain':
        return steps === 0 ? run(`${baton} handoff ${/next: ([a-z0-9-]+)/.exec(turn.all)?.[1]} "[s:artifact] the second part" --parent ${task} --json`) : { text: 'handed on' };
      default:
        return { text: `no such scenario ${scenario}` };
    }
  };
}

function usageOf(turn: Turn): Usage {
  const input = scenarioOf(turn) === 'dear' ? 20_000 : 100 + (turn.entries.length * 7);
  // Under a budget of one token left, step 2's answer that hands step 3 on costs nothing, so that the
  // run passes its budget only with its last answer, and keeps its result, whenever its spend is read.
  const free = scenarioOf(turn) === 'budget' && /: \[s:budget\] step 2 /.test(turn.all) && ranSoFar(turn).length === 0;
  const usage = free ? { input: 0, output: 0, cached: 0 } : { input, output: 11 + turn.entries.length, cached: 5 };
  const task = taskOf(turn);
  if (task) {
    const byModel = spentByTask.get(task) ?? new Map<string, Usage>();
    const had = byModel.get(turn.model) ?? { input: 0, output: 0, cached: 0 };
    byModel.set(turn.model, { input: had.input + usage.input, output: had.output + usage.output, cached: had.cached + usage.cached });
    spentByTask.set(task, byModel);
  }
  return usage;
}

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer(script(), { usage: usageOf });
});
afterAll(async () => {
  if (process.env.BATON_DEBUG_TURNS) fs.writeFileSync(process.env.BATON_DEBUG_TURNS, server.turns.map((t) => JSON.stringify({ api: t.api, last: t.last, n: t.entries.length })).join('\n'));
  await server?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function worker(cli: Cli, extra: Partial<CodingAgentOptions> = {}, existing?: TestAgent): Promise<{ agent: TestAgent; lines: Array<Record<string, unknown>> }> {
  const agent = existing ?? await newAgent(`${cli.key}-worker`);
  const dir = fs.mkdtempSync(path.join(scratch, `${cli.key}-`));
  const options = { bin: paths[cli.key], timeoutSeconds: 300, ...cli.options(server), ...extra } as CodingAgentOptions;
  const handler: Handler = await cli.runtime.executor({ [cli.key]: options }, { file: path.join(dir, 'baton.agent.json'), what: `executor "${cli.key}"`, baton: batonCommand() });
  const { lines } = await daemon(agent, { executors: { '*': handler } });
  return { agent, lines };
}

const final = (t: Task) => ['completed', 'failed', 'rejected', 'cancelled'].includes(t.status);
async function finished(sender: TestAgent, id: string, ms = 150_000): Promise<Task> {
  return eventually(async () => { const t = await sender.client.getTask(id); return final(t) ? t : undefined; }, ms, `task ${id} to finish`);
}

/** What Baton recorded for a task equals what the model server reported for it. */
async function expectUsageRecorded(sender: TestAgent, id: string) {
  const runs = await sender.client.runs(id);
  const recorded = new Map<string, Usage>();
  for (const r of runs) {
    const had = recorded.get(r.model) ?? { input: 0, output: 0, cached: 0 };
    recorded.set(r.model, { input: had.input + r.input_tokens, output: had.output + r.output_tokens, cached: had.cached + r.cached_tokens });
  }
  expect(recorded).toEqual(spentByTask.get(id));
  return runs;
}

describe.each(clis)('$key as a worker', (cli) => {
  it('does a hand-off with a file artifact and its hash, and records its usage', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:artifact] Write the report', expectedOutputs: [{ name: 'report.txt' }] });
    const done = await finished(sender, task.id);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.result?.summary).toContain('Wrote outputs/report.txt');
    const artifact = await sender.client.artifact(task.id, 'report.txt');
    expect(artifact.text()).toBe('report for the task');
    expect(artifact.sha256).toMatch(/^[0-9a-f]{64}$/);
    const runs = await expectUsageRecorded(sender, task.id);
    expect(runs[0]).toMatchObject({ runtime: cli.key, attempt: 1, agent_id: agent.id });
    expect(runs[0]!.session_id).toBeTruthy();
    if (cli.key === 'claude') expect(Number(runs[0]!.cost_usd)).toBeGreaterThan(0);
    else expect(runs[0]!.cost_usd).toBeNull();
  }, 180_000);

  it('asks from inside the run, and the answer resumes the same session', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:ask] Format the file' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'input_required', 120_000, 'the question');
    // The run ends with the question: no CLI process is left for the task while it waits.
    await eventually(async () => processesOf(task.id).length === 0, 60_000, 'the run to end');
    await sender.client.answer(task.id, 'spaces');
    const done = await finished(sender, task.id);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    // The resumed session saw its earlier turns: the command it ran before the question.
    expect(done.result?.summary).toMatch(/^Using spaces; I remember running [1-9]\d* command/);
    const runs = await expectUsageRecorded(sender, task.id);
    const main = runs.find((r) => r.model === cli.model) ?? runs[0]!;
    // Recorded as each run went, and made whole at each run's end.
    expect(main.reports).toBeGreaterThanOrEqual(2);
    expect(new Set(runs.map((r) => r.attempt))).toEqual(new Set([1]));
  }, 240_000);

  it('ends the CLI\'s whole process tree when the task is cancelled', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:cancel] Sleep' });
    // The sleep itself, which the model's first answer started, not only the CLI (whose prompt names the task).
    await eventually(async () => sleepsOf(task.id).length > 0, 120_000, 'the agent\'s sleep to start');
    await sender.client.cancel(task.id, 'not needed');
    await eventually(async () => processesOf(task.id).length === 0, 30_000, 'the process tree to end');
    expect((await sender.client.getTask(task.id)).status).toBe('cancelled');
    // What the run spent before it was cut off (the model's answer that started the sleep) is on record.
    await eventually(async () => (await sender.client.runs(task.id)).length > 0, 30_000, 'the cancelled run\'s spend');
    await expectUsageRecorded(sender, task.id);
  }, 180_000);

  it('ends a run whose budget is spent while its question is open failed, as the sender chose, and records what it spent', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:dear] Find the file', budget: { tokens: 1000, onSpent: 'fail' } });
    const done = await finished(sender, task.id);
    expect(done.status, done.status_reason ?? '').toBe('failed');
    expect(done.status_reason).toMatch(new RegExp(`^BT017: the budget on task ${task.id} is spent \\(\\d+ of 1000 tokens\\)$`));
    await eventually(async () => processesOf(task.id).length === 0, 30_000, 'the run to end');
    // No answer resumes a run that is gone.
    await expect(sender.client.answer(task.id, 'src/main.ts')).rejects.toMatchObject({ code: 'BT001' });
    const runs = await sender.client.runs(task.id);
    expect(runs.reduce((n, r) => n + r.input_tokens + r.cached_tokens, 0)).toBeGreaterThanOrEqual(20_000);
  }, 180_000);

  it('retries a CLI that crashed mid-run, once, and is done once', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:crash] Crash once' });
    await eventually(async () => processesOf(`crash-${task.id}`).length > 0, 120_000, 'the agent\'s tool to start');
    // The CLI itself dies (an OOM kill, say): its tool's sleep is left behind, until Baton ends it.
    for (const line of processesOf(`doing Baton task ${task.id}`)) process.kill(Number(line.split(' ')[0]), 'SIGKILL');
    const done = await finished(sender, task.id);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.attempts).toBe(2);
    expect(done.result?.summary).toBe('done on attempt 2');
    const events = await sender.client.events(task.id);
    expect(events.filter((e) => e.to_status === 'completed')).toHaveLength(1);
    await eventually(async () => processesOf(`crash-${task.id}`).length === 0, 30_000, 'the crashed run\'s tool to end');
  }, 240_000);
});

describe.each(clis)('$key and its model\'s errors', (cli) => {
  it('fails the attempt on a 500 and a 400, never a result, then works', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:errors] Work through errors', maxAttempts: 3 });
    // Gemini CLI retries a 500 itself, after a backoff of about 5 s, and then meets the 400: it fails the
    // attempt on that one (persistent 500s it retries ten times, for minutes, before it fails).
    failures.set(task.id, [500, 400]);
    const done = await finished(sender, task.id, 200_000);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.result?.summary).toBe('worked after the errors');
    // Each error failed an attempt, with the provider's status as its reason (a CLI's own side request
    // may meet one of them instead).
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    const retried = (await sender.client.events(task.id)).filter((e) => e.to_status === 'pending' && e.note);
    expect(retried.map((e) => e.note).join('\n')).toMatch(/HTTP (500|400)|high demand|provider rejected/);
  }, 240_000);

  it('retries a model that is rate-limited (429) after a backoff, never taking the error for a result', async () => {
    const sender = await newAgent('sender');
    const { agent } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:errors] Rate-limited', maxAttempts: 4 });
    failures.set(task.id, [429, 429]);
    const done = await finished(sender, task.id, 200_000);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    expect(done.result?.summary).toBe('worked after the errors');
    expect(failures.get(task.id)).toEqual([]);
    const retried = (await sender.client.events(task.id)).filter((e) => e.to_status === 'pending' && e.note);
    expect(retried.map((e) => e.note).join('\n')).not.toMatch(/worked after/);
    // Claude Code and Codex give up on the 429 and Baton retries the attempt after its backoff; Gemini CLI
    // backs off and retries the request itself (5 s, then 10 s), within one attempt.
    if (cli.key === 'gemini') expect(done.attempts).toBe(1);
    else expect(retried.length).toBeGreaterThanOrEqual(1);
  }, 240_000);

  it('hands back a task whose model refuses the key, without costing it an attempt', async () => {
    const sender = await newAgent('sender');
    const { agent, lines } = await worker(cli);
    const task = await sender.client.handoff({ to: agent.id, title: '[s:errors] Refused key', maxAttempts: 1 });
    refused.add(task.id);
    await eventually(async () => lines.find((l) => /^released/.test(String(l.msg)) && /credentials/.test(String(l.reason))), 120_000, 'the hand-back');
    expect((await sender.client.getTask(task.id)).status).not.toBe('failed');
    refused.delete(task.id);
    const done = await finished(sender, task.id, 200_000);
    expect(done.status, done.status_reason ?? '').toBe('completed');
  }, 240_000);
});

describe('a chain across two CLIs', () => {
  it('sums the usage of a hand-off from Claude Code to Codex under the root', async () => {
    const sender = await newAgent('sender');
    const { agent: second } = await worker(clis[1]!);
    const { agent: first } = await worker(clis[0]!);
    const root = await sender.client.handoff({ to: first.id, title: `[s:chain] Start the chain (next: ${second.id})` });
    const done = await finished(sender, root.id);
    expect(done.status, done.status_reason ?? '').toBe('completed');
    const child = await eventually(async () => (await sender.client.chain(root.id)).find((t) => t.id !== root.id), 60_000, 'the follow-up');
    const childDone = await finished(first, child.id);
    expect(childDone.status, childDone.status_reason ?? '').toBe('completed');
    const chain = await sender.client.chainUsage(root.id);
    const expected = new Map<string, Usage>();
    for (const id of [root.id, child.id]) {
      for (const [model, u] of spentByTask.get(id) ?? []) {
        const had = expected.get(model) ?? { input: 0, output: 0, cached: 0 };
        expected.set(model, { input: had.input + u.input, output: had.output + u.output, cached: had.cached + u.cached });
      }
    }
    expect(new Map(chain.map((c) => [c.model, { input: c.input_tokens, output: c.output_tokens, cached: c.cached_tokens }]))).toEqual(expected);
    expect(chain.map((c) => c.runtime).sort()).toEqual(['claude', 'codex']);
    // The sender reads the same with the CLI.
    const shown = parsed<{ usage: unknown[]; chain: Array<{ model: string; input_tokens: number }> }>(await cliAs(sender.token, stack)('show', root.id, '--chain', '--json'));
    expect(shown.usage.length).toBeGreaterThan(0);
    expect(shown.chain.map((c) => [c.model, c.input_tokens])).toEqual(chain.map((c) => [c.model, c.input_tokens]));
  }, 300_000);
});

describe('a chain under a budget, across two CLIs', () => {
  it('holds the hand-off after the run that spent the budget, asks the sender, and finishes once raised', async () => {
    const sender = await newAgent('sender');
    const [second, third] = await Promise.all([newAgent('codex-worker'), newAgent('claude-worker')]);
    const { agent: first } = await worker(clis[0]!);
    // Claude Code hands step 2 to Codex, which hands step 3 to a second Claude Code agent.
    const root = await sender.client.handoff({ to: first.id, title: `[s:budget] step 1 (next: ${second.id} then: ${third.id})`, budget: { tokens: 1_000_000 } });
    expect((await finished(sender, root.id)).status).toBe('completed');
    const inChain = (step: number) => eventually(async () => (await sender.client.chain(root.id)).find((t) => t.title.startsWith(`[s:budget] step ${step}`)), 60_000, `step ${step}`);
    const step2 = await inChain(2);
    expect((await first.client.getTask(step2.id)).budget_id).toBe(root.id);
    // One token left: the next run passes it.
    const spentByRoot = (await sender.client.budget(root.id))!.budgets[0]!.tokens_spent;
    expect(spentByRoot).toBeGreaterThan(0);
    await sender.client.setBudget(root.id, { tokens: spentByRoot + 1 });
    await worker(clis[1]!, {}, second);
    // The run that passed it had finished: it keeps its result, and its hand-off is held.
    const step2Done = await finished(first, step2.id);
    expect(step2Done.status, step2Done.status_reason ?? '').toBe('completed');
    const step3 = await inChain(3);
    const left = await sender.client.budget(root.id);
    expect(left).toMatchObject({ spent: true, tokens_left: 0 });
    const held = await second.client.getTask(step3.id);
    expect(held.status).toBe('pending');
    expect(held.status_reason).toMatch(new RegExp(`^held: the budget on task ${root.id} is spent \\(\\d+ of ${spentByRoot + 1} tokens\\)`));
    await worker(clis[0]!, {}, third);
    await expect(third.client.claim(step3.id)).rejects.toMatchObject({ code: 'BT017' });
    // The sender is asked, and raises it with the CLI; the held step goes on.
    const asked = await eventually(async () => (await sender.client.messages({ taskId: root.id, kind: 'question' })).find((m) => 'budget' in (m.body as object)), 30_000, 'the question');
    expect((asked.body as { text: string }).text).toMatch(/raise its budget/);
    const raised = parsed<{ tokens_left: number }>(await cliAs(sender.token, stack)('budget', root.id, '--tokens', '1M', '--json'));
    expect(raised.tokens_left).toBeGreaterThan(0);
    const step3Done = await finished(second, step3.id);
    expect(step3Done.status, step3Done.status_reason ?? '').toBe('completed');
    expect(step3Done.result?.summary).toContain('step 3 done');
    // What the chain spent is what the three runs reported, against the budget that holds it.
    const spent = [...[root.id, step2.id, step3.id].flatMap((id) => [...(spentByTask.get(id)?.values() ?? [])])].reduce((n, u) => n + u.input + u.output + u.cached, 0);
    expect((await sender.client.budget(root.id))!.budgets[0]!.tokens_spent).toBe(spent);
    const shown = parsed<{ budget: { tokens_left: number } }>(await cliAs(sender.token, stack)('show', root.id, '--json'));
    expect(shown.budget.tokens_left).toBe(1_000_000 - spent);
  }, 400_000);
});

describe('a loop under a budget', () => {
  it('stops two agents handing the same work back and forth by its budget, before the depth limit', async () => {
    const sender = await newAgent('sender');
    const { agent: b } = await worker(clis[1]!);
    const { agent: a } = await worker(clis[0]!);
    // About 260 tokens a run (two turns): the second run spends 400.
    const root = await sender.client.handoff({ to: a.id, title: `[s:bounce] start (next: ${b.id})`, budget: { tokens: 400 } });
    const held = await eventually(async () => {
      const waiting = (await sender.client.chain(root.id)).find((t) => t.status === 'pending' && t.status_reason?.startsWith('held:'));
      return waiting && (await sender.client.budget(root.id))?.spent && waiting;
    }, 240_000, 'a hop of the loop held by the budget');
    // Stopped before the depth limit (5): the hop held is the last; every run before it finishes (one
    // claimed before the run ahead of it reported its spend runs to its end, and its hand-off is held).
    expect(held.depth).toBeLessThan(5);
    const chain = await eventually(async () => {
      const now = await sender.client.chain(root.id);
      return now.filter((t) => t.id !== held.id).every((t) => t.status === 'completed') && now;
    }, 120_000, 'every run before the held hop to finish');
    expect(chain.some((t) => t.depth > held.depth), JSON.stringify(chain.map((t) => [t.depth, t.status]))).toBe(false);
    const addressee = held.to_agent === a.id ? a : b;
    await expect(addressee.client.claim(held.id)).rejects.toMatchObject({ code: 'BT017' });
    const spent = (await sender.client.budget(root.id))!.budgets[0]!;
    expect(spent.tokens_spent).toBeGreaterThanOrEqual(400);
    await (addressee === a ? b : a).client.cancel(held.id, 'the loop is stopped');
  }, 300_000);
});

describe('a fan-out, a retry and a daily cap under one budget, across two CLIs', () => {
  it('spends the budget by every part and the retry, refuses a greedy child, caps an agent, and shows a stranger nothing', async () => {
    const [sender, stranger] = await Promise.all([newAgent('sender'), newAgent('stranger')]);
    const { agent: claudeAgent } = await worker(clis[0]!);
    const { agent: codexAgent } = await worker(clis[1]!);
    const root = await sender.client.handoff({ to: sender.id, title: 'the whole job', budget: { tokens: 1_000_000 } });
    // Three parts on both CLIs under the root's budget; one asks for more than its chain has left.
    const fan = await sender.client.fanOut(root.id, [
      { to: claudeAgent.id, title: '[s:part] part a' },
      { to: codexAgent.id, title: '[s:part] part b' },
      { to: claudeAgent.id, title: `[s:greedy] part c (next: ${codexAgent.id})` },
    ]);
    const parts = await Promise.all(fan.tasks.map((id) => finished(sender, id)));
    expect(parts.map((t) => [t.status, t.budget_id])).toEqual(parts.map(() => ['completed', root.id]));
    // The agent that asked saw the refusal, in Baton's words.
    expect(parts[2]!.result?.summary).toMatch(/BT017|asks for \d+ more tokens, but its chain has \d+ left/);
    expect((await sender.client.chain(root.id)).some((t) => t.title === '[s:part] more')).toBe(false);

    // A part that failed, retried with the sender's CLI, draws on the same budget.
    const broken = await sender.client.handoff({ to: claudeAgent.id, title: '[s:fail-first] part d', parentTaskId: root.id, maxAttempts: 1 });
    expect((await finished(sender, broken.id)).status).toBe('failed');
    brokenUntilRetried = false;
    const retry = parsed<Task>(await cliAs(sender.token, stack)('retry', broken.id, '--json'));
    expect(retry.budget_id).toBe(root.id);
    const retried = await finished(sender, retry.id);
    expect(retried.status, retried.status_reason ?? '').toBe('completed');

    // What the budget spent is what the four runs reported.
    const ran = [...fan.tasks, broken.id, retry.id];
    const spent = ran.flatMap((id) => [...(spentByTask.get(id)?.values() ?? [])]).reduce((n, u) => n + u.input + u.output + u.cached, 0);
    expect((await sender.client.budget(root.id))!.budgets[0]!.tokens_spent).toBe(spent);

    // Codex's agent capped below what it spent today: its CLI claims nothing, its daemon leaves new work.
    await untyped(admin.db).from('agents').update({ daily_token_cap: 1 }).eq('id', codexAgent.id);
    const later = await sender.client.handoff({ to: codexAgent.id, title: '[s:part] part e', parentTaskId: root.id });
    const claim = await cliAs(codexAgent.token, stack)('claim', later.id);
    expect(claim.code).not.toBe(0);
    expect(claim.stderr).toMatch(/reached its daily cap of spend/);
    expect((await sender.client.getTask(later.id)).status).toBe('pending');
    // Raised, the daemon takes it.
    await untyped(admin.db).from('agents').update({ daily_token_cap: null }).eq('id', codexAgent.id);
    expect((await finished(sender, later.id)).status).toBe('completed');

    // A stranger reads nothing of the chain's budget or spend.
    const budget = await cliAs(stranger.token, stack)('budget', root.id);
    expect(budget.code).not.toBe(0);
    expect(parsed<unknown[]>(await cliAs(stranger.token, stack)('spend', '--agent', codexAgent.id, '--json'))).toEqual([]);
  }, 400_000);
});

/** The processes whose command line names the task (the CLI's folder or the agent's marker). */
/** The `sleep` processes a task's run started: they carry the task's id in their environment. */
function sleepsOf(taskId: string): string[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0]?.endsWith('sleep')
        && fs.readFileSync(`/proc/${p}/environ`, 'latin1').split('\0').includes(`BATON_TASK_ID=${taskId}`);
    } catch {
      return false;
    }
  });
}

function processesOf(taskId: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', taskId], { encoding: 'utf8' }).trim().split('\n').filter((l) => l && !l.includes('pgrep'));
  } catch {
    return [];
  }
}
