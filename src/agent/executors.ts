/**
 * What runs a task: an in-process handler, or a shell command that reads the task as JSON on stdin and
 * prints its result as JSON on stdout. Chosen by payload.task_type, else by a required capability,
 * else the "*" executor.
 */
import { spawn } from 'node:child_process';
import type { Logger } from 'pino';
import type { ArtifactContent, LinkedArtifact, ResolvedArtifact } from '../client/artifacts.js';
import type { AgentPresence, Artifact, FanOutJoin, HandoffInput, RunUsage, Task, TaskResult } from '../schemas.js';

/**
 * What a run's signal carries when the usage it reported spent the budget over its chain: the run stops
 * there and the task goes back, to be held (the sender is asked to raise the budget) or failed, as the
 * budget says. A run that had already finished keeps its result.
 */
export class BudgetSpentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetSpentError';
  }
}

/** What is left of the budget over a task: the least over every budget from its own up. */
export interface BudgetLeft {
  /** Tokens (input, cached input and output); undefined where no budget counts tokens. */
  tokens?: number;
  /** USD; undefined where no budget counts money. */
  usd?: number;
}

/** Throw this (or exit 75 from a shell executor) for a failure worth retrying after a backoff. */
export class RetryableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RetryableError';
  }
}

/**
 * Throw this when the task could not be started because what does the work (a gateway, a remote agent)
 * cannot be reached: the task is handed back without counting an attempt, and the agent claims nothing
 * for a while (5 s, doubling to a minute while it stays away), so that work waits for it, or goes to a
 * peer, instead of running out of attempts against a machine that is restarting. Where it is not
 * understood (older code), it is a RetryableError.
 */
export class UnavailableError extends RetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UnavailableError';
  }
}

/** Whether a failed request never reached its server (nothing listens there, or the name does not resolve). */
export function neverReached(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return true;
  }
  return false;
}

/** Exit code of a shell executor that asks for a retry (EX_TEMPFAIL from sysexits.h). */
export const RETRY_EXIT_CODE = 75;

export interface ExecutorContext {
  task: Task;
  /** 1 for the first attempt. */
  attempt: number;
  agentId: string;
  /** The tasks this one was handed off within, nearest first, with their results. */
  parents: Task[];
  /** The tasks this one depends on (depends_on, in that order), with their status and results. */
  dependencies: Task[];
  /** Artifacts this task works from (its named inputs, its parent chain's and its dependencies'), hash-checked. */
  inputs: ResolvedArtifact[];
  /** The newest input artifact with this name. */
  input(name: string): ResolvedArtifact | undefined;
  /** What was wrong with the previous attempt's outputs, when it was refused. */
  problems: Array<{ path: string; message: string }>;
  /** Attaches an output; JSON failing the task's expected json_schema is refused (OutputSchemaError). */
  artifact(name: string, content: ArtifactContent | LinkedArtifact, options?: { mediaType?: string }): Promise<Artifact>;
  /** Online agents as of the last heartbeat, for choosing whom to hand work to. */
  peers: AgentPresence[];
  /** The environment a program acts as this agent with: the API's URL and key, the agent's token, the trace's context. */
  env: Record<string, string>;
  /**
   * Fires when the task is cancelled, re-queued or taken over, or the agent shuts down; and when usage
   * reported with `usage` spent the budget over the chain (its reason a BudgetSpentError).
   */
  signal: AbortSignal;
  /** What is left of the budget over the task's chain as the run began (kept current as usage is reported); undefined: no budget. */
  budget?: BudgetLeft;
  log: Logger;
  progress(message: string, percent?: number): Promise<void>;
  message(to: string | null, body: unknown): Promise<void>;
  /** Asks the sender; the task waits in input_required and this resolves with the answer. */
  ask(question: string): Promise<string>;
  /**
   * When a question was asked on the task outside this call (by a command or a remote agent acting as
   * this agent, e.g. `baton ask`), waits for its answer and resolves with it; undefined when the task
   * waits on no question.
   */
  answered(): Promise<string | undefined>;
  /**
   * Records what a run spent (tokens by model, turns, cost), added to this attempt in the database and
   * counted in the agent's metrics. Call it once per run of the runtime and model, with that run's own
   * counts (not a running total). Under a budget, usage that spends it stops the run (`signal`), and
   * the task goes back to be held or failed whatever the executor then returns. With `ended`, the usage
   * came with the run's last word on its work (a model's answer with no tool to run after it, or a
   * CLI's account as it exits): it is not stopped for it and keeps its result, but it goes no further
   * (`ask` or `answered`, or usage that goes on, then stop it, as the budget's).
   */
  usage(usage: RunUsage, options?: { ended?: boolean }): Promise<void>;
  /** Hands off a sub-task linked to this one by parent_task_id. */
  handoff(input: HandoffInput): Promise<Task>;
  /**
   * Hands off several sub-tasks and the join that depends on them, in one call: `first` (the first
   * success wins, the others are cancelled), `all` (every result) or `judge` (an agent with the judging
   * capability gets every result). First and all joins come back to this agent.
   */
  fanOut(inputs: Array<Omit<HandoffInput, 'parentTaskId' | 'dependsOn'>>, join?: FanOutJoin): Promise<{ tasks: string[]; join: string }>;
}

export type Handler = (task: Task, ctx: ExecutorContext) => unknown;

export interface ShellExecutor {
  /** Run with /bin/sh -c; receives the task as JSON on stdin and BATON_* ids in its environment. */
  command: string;
  timeoutSeconds?: number;
  cwd?: string;
  env?: Record<string, string>;
}

export type Executor = Handler | ShellExecutor;
export type Executors = Record<string, Executor>;

/** The task_type of the join task a fan-out makes for first and all joins. */
export const JOIN_TASK_TYPE = 'baton.join';

/**
 * The built-in join, run for a fan-out's first or all join unless the agent has an executor for
 * "baton.join": first returns the winner's result; all returns every sub-task's result, in order, and
 * their summaries concatenated (partial when some did not complete and the join ran anyway).
 */
export const builtInJoin: Handler = (task, ctx) => {
  const completed = ctx.dependencies.filter((d) => d.status === 'completed');
  if (task.payload.join === 'first') {
    const winner = completed[0];
    if (!winner) throw new Error('none of the fanned-out tasks completed');
    return { ...winner.result, status: winner.result?.status ?? 'success', summary: winner.result?.summary ?? `${winner.title} finished first`, winner: { task_id: winner.id, title: winner.title, producer: winner.claimed_by } };
  }
  return {
    status: completed.length === ctx.dependencies.length ? 'success' : 'partial',
    summary: ctx.dependencies.map((d) => `${d.title}: ${d.status === 'completed' ? (d.result?.summary ?? 'done') : `${d.status}${d.status_reason ? ` (${d.status_reason})` : ''}`}`).join('\n'),
    results: ctx.dependencies.map((d) => ({ task_id: d.id, title: d.title, status: d.status, producer: d.claimed_by, result: d.result })),
  };
};

export function selectExecutor(executors: Executors, task: Task): { name: string; executor: Executor } | undefined {
  const taskType = typeof task.payload.task_type === 'string' ? task.payload.task_type : undefined;
  const names = [taskType, ...task.required_capabilities, '*'].filter((n): n is string => Boolean(n));
  const name = names.find((n) => executors[n]);
  return name ? { name, executor: executors[name]! } : undefined;
}

/** Whatever an executor returned, as the protocol's result. */
export function toResult(value: unknown): TaskResult {
  if (value === undefined || value === null) return { status: 'success' };
  if (typeof value === 'string') return { status: 'success', summary: value };
  if (typeof value === 'object' && !Array.isArray(value) && typeof (value as { status?: unknown }).status === 'string') {
    return value as TaskResult;
  }
  return { status: 'success', output: value };
}

export async function runExecutor(executor: Executor, task: Task, ctx: ExecutorContext, env: Record<string, string>): Promise<unknown> {
  return typeof executor === 'function' ? executor(task, ctx) : runShell(executor, task, ctx, env);
}

const tail = (text: string, lines = 20) => text.trimEnd().split('\n').slice(-lines).join('\n').slice(-2000);

function runShell(shell: ShellExecutor, task: Task, ctx: ExecutorContext, env: Record<string, string>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', shell.command], {
      cwd: shell.cwd,
      // Its own process group, so that a timeout or cancellation ends whatever the command started.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env, ...env, ...shell.env,
        BATON_TASK_ID: task.id, BATON_AGENT_ID: ctx.agentId, BATON_ATTEMPT: String(ctx.attempt),
        BATON_TASK_TYPE: typeof task.payload.task_type === 'string' ? task.payload.task_type : '',
      },
    });
    let stdout = '';
    let stderr = '';
    let ended: string | undefined;
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk; });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk; });

    const end = (why: string) => {
      if (ended || child.exitCode !== null) return;
      ended = why;
      const kill = (signal: NodeJS.Signals) => { try { process.kill(-child.pid!, signal); } catch { /* already gone */ } };
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 2000).unref();
    };
    const timer = shell.timeoutSeconds ? setTimeout(() => end('timeout'), shell.timeoutSeconds * 1000) : undefined;
    const onAbort = () => end('aborted');
    ctx.signal.addEventListener('abort', onAbort, { once: true });

    child.on('error', (err) => reject(new Error(`could not run "${shell.command}": ${err.message}`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      if (ended === 'timeout') return reject(new Error(`timed out after ${shell.timeoutSeconds} s${stderr ? `: ${tail(stderr)}` : ''}`));
      if (ended === 'aborted') return reject(ctx.signal.reason ?? new Error('aborted'));
      if (code === RETRY_EXIT_CODE) return reject(new RetryableError(`exit ${code} (retry): ${tail(stderr) || 'no error output'}`));
      if (code !== 0) return reject(new Error(`exit ${code ?? signal}: ${tail(stderr) || 'no error output'}`));
      const out = stdout.trim();
      if (!out) return resolve(undefined);
      try {
        resolve(JSON.parse(out));
      } catch {
        resolve(out.slice(0, 4000));
      }
    });
    child.stdin.on('error', () => { /* the command need not read its input */ });
    child.stdin.end(JSON.stringify(task));
  });
}
