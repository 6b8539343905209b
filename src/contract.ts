/**
 * The contract between the daemon and what runs a task's work: the executor's context (what a run may
 * read and do as the agent), the errors a run throws to say how it ended, and the shape of an agent
 * runtime (OpenClaw, Claude Code, Codex, Gemini CLI: one file each in src/runtimes/). The daemon
 * (src/agent/) and the runtimes both import this module and nothing of each other, so a runtime knows
 * only its contract, as pg-boss's worker knows only the fetch it is handed.
 *
 * To add a runtime: write its file in src/runtimes/ (its options as a zod schema, and `executor`
 * returning a handler that runs a task and reports with ctx), add it to src/runtimes/index.ts, and give
 * it a test against the real program (docs/architecture.md, "Adding a runtime").
 */
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { ArtifactContent, LinkedArtifact, ResolvedArtifact } from './client/artifacts.js';
import type { AgentPresence, Artifact, FanOutJoin, HandoffInput, RunUsage, Task } from './schemas.js';

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

export interface RuntimeSetting {
  /** The agent config file, for paths relative to it. */
  file: string;
  /** The `baton` command of this installation, as a program and its arguments (what an agent's shell runs). */
  baton: string[];
  /** Which executor this is, for messages (e.g. `executor "code"`). */
  what: string;
  /** This Baton's version, for a runtime that names its client to the program it talks to. */
  version?: string;
  log?: Pick<Logger, 'warn' | 'info'>;
}

/**
 * Where a runtime keeps its own folder: the variable it reads for it, else its default (`~` the home
 * folder); `within`, a folder under what the variable names (for a runtime whose variable stands for
 * the home folder, under which it keeps a folder of its own). Read with `runtimeHome` (src/config.ts).
 */
export interface RuntimeHome {
  setting: string;
  fallback: string;
  within?: string;
}

/** A place `baton skill install` copies Baton's skill to for a runtime, and the option that asks for it. */
export interface SkillTarget {
  /** The option, as commander takes it: `--claude`, or `--openclaw-workspace <folder>` for one that takes a value. */
  option: string;
  /** Whose skills these are, for the help and the report. */
  runtime: string;
  /** The option's help: where the skill goes. */
  help: string;
  /** The skills folder; `value` is the option's value where it takes one. */
  folder(value: string | true): string;
}

export interface AgentRuntime<Spec = unknown> {
  /** The key that names the runtime in an executor's entry. */
  key: string;
  /** One line for the message that lists the kinds of executor. */
  about: string;
  /** Where Baton's skill goes for this runtime (`baton skill install`), if it loads skills. */
  skills?: readonly SkillTarget[];
  /** The executor's entry, whole (with its key): checked when the config is read. */
  spec: z.ZodType<Spec>;
  /**
   * The handler that runs tasks, made once when the daemon starts: anything it needs that is missing
   * (a program not installed, a token not set) is a ConfigError here, so that start-up is all or nothing.
   */
  executor(spec: Spec, setting: RuntimeSetting): Promise<Handler>;
}
