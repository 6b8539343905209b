/** The daemon's options, from code or from a baton.agent.json file (the same names). */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import cron from 'node-cron';
import { z } from 'zod';
import { ConfigError, namedVariable } from '../config.js';
import { durationExample, parseDuration } from '../durations.js';
import type { Logger } from 'pino';
import type { AgentKeyOptions } from '../client/connection.js';
import type { Channels } from '../client/channels.js';
import type { Message, Task } from '../schemas.js';
import type { Executor, Executors } from './executors.js';
import type { AgentRuntime } from '../contract.js';
import { packageRoot } from '../stack/paths.js';
import { version } from '../package.js';

/** This installation's `baton` command, as a program and its arguments. */
export const batonCommand = (): string[] => [process.execPath, path.join(packageRoot, 'dist', 'cli', 'index.js')];

export const agentDefaults = Object.freeze({
  poll: '*/5 * * * * *',
  heartbeat: '*/30 * * * * *',
  graceSeconds: 30,
  /** How often a run waiting for its answer looks for it while push is down (seconds). */
  askPollSeconds: 1,
  /** While push is up, an answer wakes its run at once; it still looks this often, as a safety net (seconds). */
  askSafetySeconds: 30,
  /** About how often each daemon runs the sweep (jittered); the database runs one at a time. */
  sweepSeconds: 5,
  /** How many tasks one `agent tick` runs at most, claiming again as slots free. */
  tickLimit: 100,
  /** While push is up, how often the poll still claims, as a safety net (seconds). */
  slowPollSeconds: 60,
});

export interface AgentOptions extends AgentKeyOptions {
  url: string;
  /** The agent's token; the agent's id comes from it. */
  token: string;
  displayName?: string;
  capabilities?: string[];
  skillsOffered?: unknown;
  /** How many tasks it runs at once; the database refuses claims beyond it. */
  maxConcurrent?: number;
  /** What runs tasks; an agent with none only sends work and never claims. */
  executors?: Executors;
  /** node-cron expression for claiming (default every 5 s). */
  poll?: string;
  /** node-cron expression for heartbeats, lease renewal and peers (default every 30 s). */
  heartbeat?: string;
  /**
   * How often the agent is sure to wake, in seconds: its claims survive two missed wake-ups. Defaults to
   * the longest gap of its poll or heartbeat schedule, whichever runs more often; set it for `tick` from
   * system cron (e.g. 900 for every 15 minutes).
   */
  everySeconds?: number;
  /** On stop, how long running tasks may finish before they are released. */
  graceSeconds?: number;
  /** Run the sweep on every poll (default true). */
  sweep?: boolean;
  /**
   * Listen for work through Supabase Realtime (default true): claims start the moment work arrives, and
   * the poll slows to a safety net (`slowPollSeconds`) while every channel is up.
   */
  push?: boolean;
  /**
   * Realtime channels shared with the other agents this process runs (`new Channels(…)`): one
   * connection for up to 100 channels, whoever listens on them, where each agent alone holds its own.
   */
  channels?: Channels;
  /** While push is up, claim on the poll only this often, in seconds (default 60). */
  slowPollSeconds?: number;
  /** Serve Prometheus metrics at /metrics on this port (0: a free one); off when unset. */
  metricsPort?: number;
  /** Runs once for each task this agent sent that reached a final state. */
  onResult?: (task: Task, message: Message) => unknown;
  /** Runs once for each question asked on a task this agent sent (answer it with the client's answer()). */
  onQuestion?: (task: Task, message: Message) => unknown;
  log?: Logger;
}

const schedule = z.string().refine((expr) => cron.validate(expr), {
  error: 'must be a cron expression, e.g. */5 * * * * * (every 5 s) or */15 * * * * (every 15 min)',
});

const every = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const seconds = parseDuration(value);
  if (seconds === undefined) ctx.addIssue({ code: 'custom', message: `must be a duration, ${durationExample}` });
  return seconds ?? 0;
});

const ShellExecutorSpec = z.strictObject({
  command: z.string().min(1),
  timeoutSeconds: z.number().positive().optional(),
  cwd: z.string().optional(),
  env: z.record(z.string(), z.string()).optional(),
});
const ModuleExecutorSpec = z.strictObject({
  /** A JS module whose export is a handler `async (task, ctx) => result`. */
  module: z.string().min(1),
  export: z.string().default('default'),
});

const A2AExecutorSpec = z.strictObject({
  /** A remote A2A agent: its base URL or its card's URL. */
  a2a: z.url(),
  /** The environment variable holding a bearer token for it, if it asks for one. */
  tokenEnv: z.string().optional(),
  /**
   * What the agent's `input-required` means: a question to the sender (A2A's meaning, the default), or,
   * for agents that end every turn so (Gemini CLI's A2A server), the end of the work, its last words the result.
   */
  inputRequired: z.enum(['question', 'result']).default('question'),
});

/** An entry of a runtime's (src/runtimes): checked by the runtime's own schema. */
interface RuntimeEntry {
  runtime: AgentRuntime<unknown>;
  entry: unknown;
}
type ExecutorSpec = z.infer<typeof ShellExecutorSpec> | z.infer<typeof ModuleExecutorSpec> | z.infer<typeof A2AExecutorSpec> | RuntimeEntry;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An executor's entry, its kind told by its key, so that a mistake names the field. */
function executorSpec(runtimes: ReadonlyArray<AgentRuntime<unknown>>) {
  const builtIn = [['command', ShellExecutorSpec], ['module', ModuleExecutorSpec], ['a2a', A2AExecutorSpec]] as const;
  const kinds = ['"command" (a shell command that reads the task as JSON on stdin)', '"module" (a JS module exporting a handler)', '"a2a" (a remote A2A agent\'s URL)', ...runtimes.map((r) => r.about)];
  return z.unknown().transform((value, ctx): ExecutorSpec => {
    const key = isObject(value) ? [...builtIn.map(([k]) => k), ...runtimes.map((r) => r.key)].find((k) => k in value) : undefined;
    const runtime = runtimes.find((r) => r.key === key);
    const schema = builtIn.find(([k]) => k === key)?.[1] ?? runtime?.spec;
    if (!schema) {
      ctx.addIssue({ code: 'custom', message: `needs ${kinds.slice(0, -1).join(', ')} or ${kinds.at(-1)}` });
      return z.NEVER;
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      return z.NEVER;
    }
    return runtime ? { runtime, entry: parsed.data } : parsed.data as ExecutorSpec;
  });
}

/** What baton.agent.json may hold, with the runtimes' entries (src/runtimes). */
export async function agentFileSchema() {
  const [{ runtimes }, { OpenClawSpec }, { CodexSessionSpec }] = await Promise.all([
    import('../runtimes/index.js'), import('../runtimes/openclaw.js'), import('../runtimes/codex-session.js')]);
  return z.strictObject({
    /**
     * The environment variable (or .env line) holding this agent's token, where one process runs
     * several agents (`baton agent run --config a.json --config b.json`); BATON_AGENT_TOKEN otherwise.
     */
    tokenEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable\'s name, e.g. BATON_REVIEWER_TOKEN' }).optional(),
    displayName: z.string().optional(),
    capabilities: z.array(z.string()).optional(),
    skillsOffered: z.json().optional(),
    maxConcurrent: z.number().int().optional(),
    poll: schedule.optional(),
    heartbeat: schedule.optional(),
    /** How often the agent wakes (tick from system cron): 15m, 900, ... */
    every: every.optional(),
    graceSeconds: z.number().nonnegative().optional(),
    sweep: z.boolean().optional(),
    /** Listen for work through Supabase Realtime (default true). */
    push: z.boolean().optional(),
    slowPollSeconds: z.number().positive().optional(),
    metricsPort: z.number().int().min(0).max(65535).optional(),
    executors: z.record(z.string(), executorSpec(runtimes)).optional(),
    /** Tell an OpenClaw gateway's agent, or a person's Codex session, the results of and questions about the tasks this agent sent. */
    tell: z.union([OpenClawSpec, CodexSessionSpec]).optional(),
  });
}
type AgentFileConfig = z.infer<Awaited<ReturnType<typeof agentFileSchema>>>;

/** Reads and checks baton.agent.json; module executors are imported relative to the file. */
export async function loadAgentFile(file: string, log?: Pick<Logger, 'warn' | 'info'>): Promise<Omit<AgentFileConfig, 'executors' | 'tell'> & Pick<AgentOptions, 'executors' | 'onResult' | 'onQuestion'>> {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`cannot read the agent config ${file}: ${(err as Error).message}`);
  }
  const parsed = (await agentFileSchema()).safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
    throw new ConfigError(`the agent config ${file} is invalid: ${problems}`);
  }
  const { executors: specs, tell, ...rest } = parsed.data;
  const told = tell ? await tellerOf(tell, log) : {};
  const executors: Executors = {};
  for (const [name, spec] of Object.entries(specs ?? {})) {
    if ('runtime' in spec) {
      executors[name] = await spec.runtime.executor(spec.entry, { file: path.resolve(file), what: `executor "${name}"`, baton: batonCommand(), version, log });
      continue;
    }
    if ('command' in spec) {
      executors[name] = { ...spec, cwd: spec.cwd ? path.resolve(path.dirname(file), spec.cwd) : path.dirname(path.resolve(file)) };
      continue;
    }
    if ('a2a' in spec) {
      const token = spec.tokenEnv ? namedVariable(spec.tokenEnv) : undefined;
      if (spec.tokenEnv && !token) throw new ConfigError(`executor "${name}": ${spec.tokenEnv} is set neither in the environment nor in the project's .env; it holds the token for the A2A agent at ${spec.a2a}`);
      const { a2aExecutor } = await import('../a2a/executor.js');
      executors[name] = a2aExecutor({ url: spec.a2a, token, inputRequired: spec.inputRequired });
      continue;
    }
    const url = pathToFileURL(path.resolve(path.dirname(file), spec.module)).href;
    const handler = (await import(url) as Record<string, unknown>)[spec.export];
    if (typeof handler !== 'function') {
      throw new ConfigError(`executor "${name}": ${spec.module} has no function export "${spec.export}"`);
    }
    executors[name] = handler as Executor;
  }
  return { ...rest, ...told, executors };
}

/** The teller `tell` names: an OpenClaw gateway's agent, or a person's Codex session. */
async function tellerOf(tell: NonNullable<AgentFileConfig['tell']>, log?: Pick<Logger, 'warn' | 'info'>) {
  if ('codex-session' in tell) {
    const { codexSessionTeller, sessionOptions } = await import('../runtimes/codex-session.js');
    return codexSessionTeller(sessionOptions(tell, '"tell"'), version, log);
  }
  const openclaw = await import('../runtimes/openclaw.js');
  return openclaw.openclawTeller({ ...openclaw.gatewayOf(tell, '"tell"'), log });
}

/**
 * The longest gap between runs of a cron expression, in seconds, over its next few runs: how often an
 * agent on that schedule is sure to be heard from.
 */
export function schedulePeriodSeconds(expr: string): number {
  const task = cron.createTask(expr, () => undefined);
  try {
    const runs = task.getNextRuns(6).map((d) => d.getTime());
    const gaps = runs.slice(1).map((t, i) => (t - runs[i]!) / 1000);
    return Math.max(1, ...gaps);
  } finally {
    void task.destroy();
  }
}

export function checkSchedule(expr: string, what: string): string {
  if (!cron.validate(expr)) throw new ConfigError(`the ${what} schedule "${expr}" is not a cron expression (e.g. */5 * * * * *)`);
  return expr;
}
