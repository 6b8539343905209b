/**
 * What runs a task: an in-process handler, or a shell command that reads the task as JSON on stdin and
 * prints its result as JSON on stdout. Chosen by payload.task_type, else by a required capability,
 * else the "*" executor.
 */
import { spawn } from 'node:child_process';
import { endTree, runMark } from '../reaper.js';
import type { Task, TaskResult } from '../schemas.js';

export {
  BudgetSpentError, neverReached, RETRY_EXIT_CODE, RetryableError, UnavailableError, type BudgetLeft, type ExecutorContext, type Handler,
} from '../contract.js';
import { RETRY_EXIT_CODE, RetryableError, type ExecutorContext, type Handler } from '../contract.js';

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
    const mark = runMark();
    const child = spawn('/bin/sh', ['-c', shell.command], {
      cwd: shell.cwd,
      // Its own process group, so that a timeout or cancellation ends whatever the command started.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env, ...env, ...shell.env,
        BATON_TASK_ID: task.id, BATON_AGENT_ID: ctx.agentId, BATON_ATTEMPT: String(ctx.attempt),
        BATON_TASK_TYPE: typeof task.payload.task_type === 'string' ? task.payload.task_type : '',
        BATON_RUN: mark,
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
      endTree(child.pid!, mark);
    };
    const timer = shell.timeoutSeconds ? setTimeout(() => end('timeout'), shell.timeoutSeconds * 1000) : undefined;
    const onAbort = () => end('aborted');
    ctx.signal.addEventListener('abort', onAbort, { once: true });

    child.on('error', (err) => reject(new Error(`could not run "${shell.command}": ${err.message}`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      // A command that failed leaves nothing running (what it started in the background, too), as a CLI's run.
      if (!ended && code !== 0) endTree(child.pid!, mark);
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
