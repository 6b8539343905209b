/**
 * What Claude Code, Codex and Gemini CLI have in common as Baton's workers: each task runs the real CLI
 * non-interactively in a working folder of its own, with a private home (the CLI's settings and
 * sessions) and the `baton` command on its PATH acting as the agent. The agent asks
 * the sender with `baton ask` and ends its turn; the run ends and frees its slot; the answer resumes the
 * same session. Every run's usage is recorded with the attempt. Each CLI's file says only how to call it
 * and how to read what it prints (CodingCli).
 *
 * What a provider or the CLI says about itself is never the work's result: an API error, a refused
 * tool, a crash or a kill is a failed attempt (retried by the task's policy); a refusal of the agent's
 * own credentials (401, 403) is a configuration error that costs the work no attempt (UnavailableError:
 * the task is handed back and the agent pauses its claims).
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { RetryableError, UnavailableError, type AgentRuntime, type BudgetLeft, type ExecutorContext, type RuntimeHome, type RuntimeSetting } from '../contract.js';
import { guessMediaType } from '../client/artifacts.js';
import { ConfigError, passedEnvironment } from '../config.js';
import type { RunUsage, Task } from '../schemas.js';
import { replyResult } from './conversation.js';
import { LOOK_EVERY_MS, SpendRecorder, type Meter } from './spend.js';
import { endTree, runMark } from '../reaper.js';
import { skillsInHome } from './skills.js';

/** The options every coding-agent executor takes, under its CLI's key: `{"claude": {…}}`. */
export const CodingAgentOptions = z.strictObject({
  /** The CLI to run: a path, or a name found on PATH (default: the CLI's own command). */
  bin: z.string().min(1).optional(),
  /** The model to ask for (the CLI's default when unset). */
  model: z.string().min(1).optional(),
  /** The tools the agent may use, in the CLI's own names; none but Baton's own when unset. */
  tools: z.array(z.string().min(1)).optional(),
  /** Arguments added to every run, after Baton's. */
  args: z.array(z.string()).default([]),
  /** Variables added to the CLI's environment (its provider's key is passed from the daemon's). */
  env: z.record(z.string(), z.string()).default({}),
  /** Where each task's working folder is made (relative to the config file); default .baton/work beside it. */
  workspace: z.string().min(1).optional(),
  /** How long one run of the CLI may take, in seconds, before its process tree is ended. */
  timeoutSeconds: z.number().positive().default(1800),
  /**
   * Let the agent use every tool without asking (Claude Code's --dangerously-skip-permissions, Codex's
   * danger-full-access sandbox, Gemini CLI's --yolo). Off by default: only the tools named run.
   */
  bypassPermissions: z.boolean().default(false),
  /** Say that this machine is a sandbox (a container or VM of its own), which Claude Code asks before it bypasses its prompts as root. */
  sandboxed: z.boolean().default(false),
});
export type CodingAgentOptions = z.infer<typeof CodingAgentOptions>;

/** One run of a CLI, as the runtime file sees it. */
export interface RunSetup {
  options: CodingAgentOptions;
  task: Task;
  /** The task's working folder: the CLI's working directory. */
  work: string;
  /** The run's private home: the CLI's settings and sessions. */
  home: string;
  /** The variables the CLI gets from Baton: the task, its PATH with `baton` on it, its HOME. */
  baton: Record<string, string>;
  /** The `baton` command of this task, acting as the agent: what the agent's shell runs. */
  batonPath: string;
  /** The `baton` command as a program and its arguments (the settings not included). */
  batonCommand: string[];
  /** What is left of the budget over the task as the run begins, for a CLI that takes a limit. */
  budget?: BudgetLeft;
}

/** The session of one attempt, carried from run to run; a CLI file may keep what it needs in `state`. */
export interface Session {
  id?: string;
  /** Whether a run of this session has happened (the next one resumes it). */
  resumed: boolean;
  state: Record<string, unknown>;
}

export interface CliOutput {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunReport {
  sessionId?: string;
  /** The agent's last reply. */
  text?: string;
  usage: Array<Omit<RunUsage, 'runtime' | 'sessionId'>>;
  /** Why the run failed: a model or runtime error (retry), a refused credential (config), or the agent's own failure (fail). */
  failure?: { message: string; kind: 'retry' | 'config' | 'fail' };
}

/** What a CLI's file gives: how to install, set up, call and read one coding agent. */
export interface CodingCli {
  key: string;
  /** The product's name, for messages. */
  name: string;
  /** The npm package that installs it. */
  npmPackage: string;
  /** Its command. */
  command: string;
  /** Its own folder (settings, skills), as its variable names it: Baton's skill goes to its `skills`. */
  home: RuntimeHome;
  /** The daemon's variables the CLI is given (its provider's key and base URL). */
  passEnv: RegExp;
  /** Refuses options this CLI cannot honour (at start-up). */
  check?(options: CodingAgentOptions): void;
  /** Writes the run's home (settings, Baton's MCP server) and returns the variables that point the CLI at it. */
  prepare(run: RunSetup): Record<string, string>;
  /** The session id to start a first run with, where the CLI lets the caller choose it. */
  newSession?(): string;
  args(run: RunSetup, prompt: string, session: Session): string[];
  /** Where the run's spend is read as it goes (spend.ts), made as each run begins. */
  meter?(run: RunSetup, session: Session): Meter;
  /** What the run said once it ended: its reply, its session, its whole spend, what went wrong. */
  read(output: CliOutput, session: Session, run: RunSetup): RunReport;
}

/** An output file larger than this is not attached (an artifact holds at most 1 MiB inline). */
const MAX_OUTPUT_BYTES = 1024 * 1024;
const OUTPUTS = 'outputs';
const INPUTS = 'inputs';

/** An HTTP status from a provider, read as Baton's kind of failure. */
export function failureOfStatus(status: number, message: string): NonNullable<RunReport['failure']> {
  if (status === 401 || status === 403) return { kind: 'config', message: `the model provider refused the agent's credentials (HTTP ${status}): ${message}` };
  return { kind: 'retry', message: `the model provider answered HTTP ${status}: ${message}` };
}

/** The runtime for one coding-agent CLI. */
export function codingAgentRuntime(cli: CodingCli): AgentRuntime<Record<string, CodingAgentOptions>> {
  const spec = z.strictObject({ [cli.key]: CodingAgentOptions });
  return {
    key: cli.key,
    about: `"${cli.key}" (${cli.name}, with its options: {"${cli.key}": {"model": …}})`,
    spec: spec as unknown as z.ZodType<Record<string, CodingAgentOptions>>,
    skills: [skillsInHome(cli.key, cli.name, cli.home)],
    async executor(entry, setting) {
      const options = CodingAgentOptions.parse(entry[cli.key] ?? {});
      cli.check?.(options);
      const bin = await findProgram(options.bin ?? cli.command, cli, setting);
      const root = path.resolve(path.dirname(setting.file), options.workspace ?? path.join('.baton', 'work'));
      try {
        fs.mkdirSync(root, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw new ConfigError(`${setting.what}: cannot make the working folder ${root}: ${(err as Error).message}; set "workspace" to a folder the daemon may write`);
      }
      if (process.getuid?.() === 0) {
        setting.log?.warn({ executor: setting.what }, `${cli.name} runs as root here: whatever tools it is allowed act as root on this machine (docs/coding-agents.md, "What the agent may do")`);
      }
      return (task, ctx) => runTask(cli, bin, root, options, setting.baton, task, ctx);
    },
  };
}

/** The CLI's path, checked to start: not installed, or unable to start, stops the daemon at start-up. */
async function findProgram(bin: string, cli: CodingCli, setting: RuntimeSetting): Promise<string> {
  const resolved = bin.includes('/') ? path.resolve(path.dirname(setting.file), bin)
    : (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, bin)).find((p) => isExecutable(p));
  const install = `install it (npm install --global ${cli.npmPackage}), or set "bin" to its path`;
  if (!resolved || !isExecutable(resolved)) throw new ConfigError(`${setting.what}: ${cli.name} (${bin}) is not installed here: ${install}`);
  await new Promise<void>((resolve, reject) => {
    execFile(resolved, ['--version'], { timeout: 60_000, env: { ...passedEnvironment(cli.passEnv), HOME: process.env.HOME ?? '/' } }, (err, stdout, stderr) => {
      if (err) reject(new ConfigError(`${setting.what}: ${cli.name} at ${resolved} does not start (${err.message.split('\n')[0]}${stderr ? `: ${stderr.trim().slice(-300)}` : ''}); ${install}`));
      else resolve();
    });
  });
  return resolved;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** One task: its folder, then runs of the CLI until it replies without a question pending. */
async function runTask(cli: CodingCli, bin: string, root: string, options: CodingAgentOptions, batonCommand: string[], task: Task, ctx: ExecutorContext): Promise<unknown> {
  const dir = path.join(root, task.id);
  const run = setUp(dir, options, batonCommand, task, ctx);
  const env = { ...passedEnvironment(cli.passEnv), ...options.env, ...run.baton, ...cli.prepare(run) };
  const session: Session = { id: cli.newSession?.(), resumed: false, state: {} };
  let prompt = taskPrompt(task, ctx, run.batonPath);
  for (;;) {
    // What the run spends is recorded as it is read (a budget can stop it mid-way; a cancel, a timeout
    // or a crash leaves it on record), and made whole with what the CLI says at its end.
    const spend = new SpendRecorder(ctx, cli.key, () => session.id);
    const meter = cli.meter?.(run, session);
    const output = await runCli(bin, cli.args(run, prompt, session), run.work, env, options.timeoutSeconds, ctx, meter, spend);
    const report = cli.read(output, session, run);
    session.id = report.sessionId ?? session.id;
    session.resumed = true;
    // Read once the CLI ended: a run that spent the budget but finished keeps its reply; one that goes
    // on (a question) is stopped when it would wait for the answer.
    spend.upTo(report.usage.length ? report.usage : meter?.look?.()?.spent, { ended: true });
    await spend.settled();
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    if (output.timedOut) throw new RetryableError(`${cli.name} ran past its ${options.timeoutSeconds} s and was stopped (its process tree ended)${tail(output.stderr)}`);
    if (report.failure) throw failure(cli, report.failure);
    if (output.code !== 0) {
      throw new RetryableError(`${cli.name} exited ${output.code ?? `on ${output.signal}`}${tail(output.stderr) || (report.text ? `: ${report.text.slice(0, 500)}` : '')}`);
    }
    const answer = await ctx.answered();
    if (answer === undefined) {
      const result = await finish(report.text ?? '', run, ctx, cli);
      fs.rmSync(dir, { recursive: true, force: true });
      return result;
    }
    ctx.log.info({ sessionId: session.id }, `${cli.name} asked, and was answered: resuming its session`);
    prompt = `Answer from ${task.from_agent} to your question on Baton task ${task.id}:\n\n${answer}\n\nGo on with the task, and end with your result.`;
  }
}

const tail = (text: string) => {
  const last = text.trim().split('\n').slice(-10).join('\n').slice(-1500);
  return last ? `: ${last}` : '';
};

function failure(cli: CodingCli, f: NonNullable<RunReport['failure']>): Error {
  if (f.kind === 'config') return new UnavailableError(`${cli.name}: ${f.message} (a configuration error: the task is handed back without counting an attempt; fix the agent's settings)`);
  if (f.kind === 'fail') return new Error(`${cli.name}: ${f.message}`);
  return new RetryableError(`${cli.name}: ${f.message}`);
}

/** The task's folder: work/ (inputs/ and outputs/ in it), home/ and bin/ (the `baton` command). */
function setUp(dir: string, options: CodingAgentOptions, batonCommand: string[], task: Task, ctx: ExecutorContext): RunSetup {
  const work = path.join(dir, 'work');
  const home = path.join(dir, 'home');
  const bin = path.join(dir, 'bin');
  const tmp = path.join(dir, 'tmp');
  for (const d of [dir, work, home, bin, tmp, path.join(work, OUTPUTS)]) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  if (ctx.inputs.length) {
    fs.mkdirSync(path.join(work, INPUTS), { recursive: true });
    // Oldest first, so that the newest input of a name is the one on disk (as ctx.input reads it).
    for (const input of ctx.inputs) {
      if (input.content) fs.writeFileSync(path.join(work, INPUTS, input.name), input.content);
    }
  }
  // The agent's shell runs this `baton` as the agent, on this task, whatever environment the CLI gives
  // its tools (Codex drops variables named like secrets, and a login shell sets PATH anew): the settings
  // live in the script, in the task's folder that only this user may read, and not in the CLI's env.
  const batonPath = path.join(bin, 'baton');
  const settings = Object.entries({ ...ctx.env, BATON_TASK_ID: task.id }).map(([k, v]) => `export ${k}=${shellQuote(v)}`);
  fs.writeFileSync(batonPath, ['#!/bin/sh', ...settings, `exec ${batonCommand.map(shellQuote).join(' ')} "$@"`, ''].join('\n'), { mode: 0o700 });
  const baton = {
    BATON_TASK_ID: task.id,
    BATON_AGENT_ID: ctx.agentId,
    BATON_ATTEMPT: String(ctx.attempt),
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: home,
    // What a CLI leaves in its temporary folder (Gemini CLI's error reports) goes with the task's folder.
    TMPDIR: tmp,
  };
  return { options, task, work, home, baton, batonPath, batonCommand, budget: ctx.budget };
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The task as the agent needs it: what to do, what it has, what to return, and how to talk to Baton. */
export function taskPrompt(task: Task, ctx: Pick<ExecutorContext, 'attempt' | 'inputs'>, baton = 'baton'): string {
  const { task_type: _type, ...payload } = task.payload;
  const lines = [`You are doing Baton task ${task.id}, handed to you by the agent "${task.from_agent}": ${task.title}`];
  if (task.description && task.description !== task.title) lines.push('', task.description);
  if (Object.keys(payload).length) lines.push('', `Payload (JSON): ${JSON.stringify(payload)}`);
  if (ctx.inputs.length) {
    lines.push('', `Input files, in ./${INPUTS}/:`);
    for (const a of ctx.inputs) lines.push(`- ${INPUTS}/${a.name} (${a.media_type}, ${a.size_bytes ?? '?'} bytes, sha256 ${a.sha256 ?? 'unknown'})`);
  }
  const expected = task.expected_outputs.map((o) => `${o.name}${o.media_type ? ` (${o.media_type})` : ''}${o.required === false ? ', optional' : ''}`);
  lines.push('', `Files you deliver go in ./${OUTPUTS}/: each becomes an artifact of the task, with its hash.`);
  if (expected.length) lines.push(`Expected outputs: ${expected.join('; ')}.`);
  if (ctx.attempt > 1) lines.push('', `This is attempt ${ctx.attempt}: an earlier one did not finish; what it left in this folder is still here.`);
  lines.push(
    '',
    `To talk to Baton, run ${baton} in your shell (it acts as you, on this task):`,
    `- to ask ${task.from_agent} something you need: \`${baton} ask ${task.id} "<question>"\`, then end your turn at once; the answer comes back here as the next message.`,
    `- to report progress: \`${baton} progress ${task.id} "<what is done>"\`.`,
    `- to hand part of the work to another agent: \`${baton} handoff <agent> "<title>" --parent ${task.id}\`.`,
    '',
    'When you are done, end with your result: your last message is the task\'s summary. If you cannot do it, start that message with FAILED: and say why.',
  );
  return lines.join('\n');
}

/** The agent's last reply as the result, and the files it delivered as artifacts. */
async function finish(reply: string, run: RunSetup, ctx: ExecutorContext, cli: CodingCli): Promise<unknown> {
  // The reply is the result, as for every runtime (a FAILED: reply fails before any output is attached).
  const { summary } = await replyResult(reply, ctx, cli.name);
  const attached: string[] = [];
  const skipped: string[] = [];
  const candidates = new Map<string, string>();
  const outputs = path.join(run.work, OUTPUTS);
  for (const name of fs.readdirSync(outputs)) candidates.set(name, path.join(outputs, name));
  // An expected output written beside the outputs folder instead of in it counts too.
  for (const { name } of run.task.expected_outputs) {
    const loose = path.join(run.work, name);
    if (!candidates.has(name) && fs.existsSync(loose)) candidates.set(name, loose);
  }
  for (const [name, file] of candidates) {
    const stat = fs.statSync(file);
    if (!stat.isFile()) continue;
    if (stat.size > MAX_OUTPUT_BYTES) { skipped.push(`${name} (${stat.size} bytes: over 1 MiB)`); continue; }
    const content = fs.readFileSync(file);
    await ctx.artifact(name, content, { mediaType: guessMediaType(name, content) });
    attached.push(name);
  }
  if (skipped.length) ctx.log.warn({ skipped }, 'output files too large to attach were left out');
  return {
    status: 'success', summary,
    ...(skipped.length ? { metrics: { outputs_left_out: skipped } } : {}),
    ...(attached.length ? { artifacts: attached.map((name) => ({ name })) } : {}),
  };
}

/** Runs the CLI to its end, or ends its whole process tree on a cancel, a lapsed claim, a stop or the timeout. */
function runCli(bin: string, args: string[], cwd: string, runEnv: Record<string, string>, timeoutSeconds: number, ctx: ExecutorContext,
  meter: Meter | undefined, spend: SpendRecorder): Promise<CliOutput & { timedOut: boolean }> {
  // Every process of the run inherits this mark, which finds the tools that left the CLI's process
  // group and outlived it (a crashed CLI's tools are reparented where its pid no longer finds them).
  const env = { ...runEnv, BATON_RUN: runMark() };
  return new Promise((resolve, reject) => {
    // Its own process group, so that the tools it started end with it.
    const child = spawn(bin, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    let timedOut = false;
    // Each line as it comes, for the meter; the whole output for the CLI's file at the end.
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out.push(chunk);
      if (!meter?.line) return;
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const read = meter.line(line);
        if (read) spend.upTo(read.spent, { ended: read.ended });
      }
    });
    child.stderr.on('data', (chunk: Buffer) => { err = (err + chunk.toString('utf8')).slice(-20_000); });
    const looking = meter?.look ? setInterval(() => {
      const read = meter.look!();
      if (read) spend.upTo(read.spent, { ended: read.ended });
    }, LOOK_EVERY_MS) : undefined;
    const stop = () => endTree(child.pid!, env.BATON_RUN!);
    const timer = setTimeout(() => { timedOut = true; stop(); }, timeoutSeconds * 1000);
    ctx.signal.addEventListener('abort', stop, { once: true });
    child.on('error', (e) => {
      clearInterval(looking);
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', stop);
      reject(new UnavailableError(`could not start ${bin}: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      clearInterval(looking);
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', stop);
      // A CLI that crashed leaves its tools running: whatever carries the run's mark ends too.
      if (code !== 0) endTree(child.pid!, env.BATON_RUN!);
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: err, code, signal, timedOut });
    });
  });
}

/** A fresh session id, for CLIs that take one. */
export const newSessionId = (): string => crypto.randomUUID();
