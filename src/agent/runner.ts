/**
 * One task, from claim to report: picks its executor, gathers what it may read (parents, dependencies,
 * inputs), runs it with an abort signal, and reports the outcome through the reporter. A refusal
 * because the claim was lost (fencing) is logged and dropped; an outcome that cannot reach the API is
 * tried again until the database answers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { BatonClient, Outcome } from '../client/agent.js';
import type { ResolvedArtifact } from '../client/artifacts.js';
import { BatonError, batonCode, isRetryable, MissingOutputsError, OutputSchemaError } from '../errors.js';
import type { AgentPresence, Task, TaskBudget, TaskResult, TaskStatus } from '../schemas.js';
import { finalStatuses } from '../statuses.js';
import { budgetAmounts } from '../text/words.js';
import {
  BudgetSpentError, builtInJoin, JOIN_TASK_TYPE, RetryableError, runExecutor, UnavailableError, selectExecutor, toResult, type BudgetLeft, type ExecutorContext, type Executors,
} from './executors.js';
import { agentApiKey } from '../client/connection.js';
import { agentDefaults, type AgentOptions } from './options.js';
import type { OutageLog } from './outage.js';
import type { OutcomeBatcher } from './outcomes.js';
import { childSpan, markOutcome, processSpan, traceEnv } from '../telemetry/task-spans.js';
import { outcomeOf, type DaemonMetrics } from '../telemetry/metrics.js';

type OutcomeOf = { result: TaskResult } | { error: string; retry: boolean; problems?: Array<{ path: string; message: string }> };

/**
 * Why a run is stopped when the daemon could not confirm its claim in time: cut off from the API, it
 * cannot know whether the claim lapsed and the task went to another holder, so it stops the executor
 * before that can happen, and hands the claim back once the API answers.
 */
export class ClaimUnconfirmedError extends Error {}

/** The longest wait between two tries at reporting an outcome while the API or database is away. */
const maxReportRetryMs = 5_000;

export interface RunnerDeps {
  client: BatonClient;
  agentId: string;
  executors: Executors;
  reporter: OutcomeBatcher;
  log: Logger;
  /** The environment a command executor gets to act as the agent. */
  env: Record<string, string>;
  peers(): AgentPresence[];
  stopping(): boolean;
  /** The agent's metrics, when it serves them. */
  metrics(): DaemonMetrics | undefined;
  /** The task waits for an answer (its slot frees meanwhile), or goes on. */
  waiting(taskId: string, waiting: boolean): void;
  /** What does the work could not be reached (an UnavailableError, `why`), or a run got through to it. */
  executorAway(away: boolean, why?: string): void;
  /** The daemon's one account of an API that is away: a line when it goes, a line when it is back. */
  outage: Pick<OutageLog, 'failed' | 'ok'>;
  /** Whether push is up (every channel joined): news of a task then comes by itself (`heard`). */
  pushUp(): boolean;
}

export class TaskRunner {
  /** The runs waiting for an answer, each woken when news of its task arrives. */
  private readonly answerWaits = new Map<string, () => void>();

  constructor(private readonly deps: RunnerDeps) {}

  /** News of these tasks arrived by push (an answer moves its task on): their waiting runs look now. */
  heard(taskIds: readonly string[]): void {
    for (const id of taskIds) this.answerWaits.get(id)?.();
  }

  /** Runs `task` to its reported outcome; `reported` is called once the outcome is on its way. */
  run(task: Task, signal: AbortSignal, reported: () => void): Promise<void> {
    return processSpan(task, this.deps.agentId, () => this.runTask(task, signal, reported));
  }

  private async runTask(task: Task, signal: AbortSignal, reported: () => void): Promise<void> {
    const { client, agentId, executors } = this.deps;
    const log = this.deps.log.child({ taskId: task.id, attempt: task.attempts });
    const started = Date.now();
    const report = (call: () => Promise<Task | TaskStatus>, what: string, err?: unknown, why?: string) => {
      reported();
      markOutcome(what, Boolean(err || why));
      this.deps.metrics()?.taskEnded(task, outcomeOf(what), (Date.now() - started) / 1000);
      return childSpan('baton report', { 'baton.outcome': what }, () => this.report(call, log, started, what, err, why, task));
    };
    log.info({ title: task.title, from: task.from_agent }, 'claimed');
    this.deps.metrics()?.taskClaimed(task);
    const chosen = selectExecutor({ [JOIN_TASK_TYPE]: builtInJoin, ...executors }, task);
    if (!chosen) {
      // Not this agent's kind of work: rejected if addressed to it, else left for a capable peer.
      const reason = noExecutorReason(agentId, task, executors);
      await report(() => client.decline(task.id, task.claim_token, reason),
        task.to_agent === agentId ? 'declined: rejected, no executor' : 'declined: left for another agent, no executor', undefined, reason);
      return;
    }
    /** The outcome of this task, for the reporter (which also gives it its claim). */
    const submit = (outcome: OutcomeOf) => () => this.deps.reporter.submit({ taskId: task.id, claimToken: task.claim_token, ...outcome } as Outcome);
    // Under a budget, usage that spends it stops the run: its own signal joins the daemon's.
    const budget = task.budget_id ? new AbortController() : undefined;
    const runSignal = budget ? AbortSignal.any([signal, budget.signal]) : signal;
    try {
      const ctx = await this.context(task, runSignal, log, budget);
      const value = await childSpan('baton execute', { 'baton.executor': chosen.name }, (span) => {
        const env = { ...ctx.env, ...traceEnv(span) };
        return runExecutor(chosen.executor, task, { ...ctx, env }, env);
      });
      this.deps.executorAway(false);
      if (signal.aborted) return await this.stopped(task, signal, log, started, report);
      // Once the budget stopped the run, its outcome is the budget's, whatever the executor returned.
      if (budget?.signal.aborted) return await this.budgetSpent(budget, submit, report);
      const result = toResult(value);
      // A result.handoff becomes the follow-up task in the same transaction as the completion.
      await report(submit({ result }), result.handoff ? 'completed, follow-up handed off' : 'completed');
    } catch (err) {
      if (signal.aborted) return await this.stopped(task, signal, log, started, report);
      if (budget?.signal.aborted) return await this.budgetSpent(budget, submit, report, err);
      if (err instanceof OutputSchemaError || err instanceof MissingOutputsError) {
        // Outputs refused: the executor runs once more with the problems in its context, counting as an
        // attempt (the database turns a retry into a final failure once attempts run out); refused again,
        // the task fails with them.
        const problems = err instanceof OutputSchemaError ? err.problems : [{ path: '', message: err.message }];
        const retry = !task.problems?.length;
        await report(submit({ error: `outputs refused: ${err.message}`, retry, problems }),
          retry ? 'outputs refused; running again with the problems' : 'outputs refused again; failed', err);
        return;
      }
      if (err instanceof UnavailableError) {
        // The task never started: handed back, not a failed attempt; the agent waits before claiming again.
        this.deps.executorAway(true, err.message);
        await report(() => this.deps.client.release(task.id, task.claim_token, `handed back: ${err.message}`), 'released: what does the work cannot be reached', undefined, err.message);
        return;
      }
      this.deps.executorAway(false);
      // An API or database away mid-task is no fault of the task: it runs again.
      const retry = err instanceof RetryableError || isRetryable(err);
      const message = err instanceof Error ? err.message : String(err);
      await report(submit({ error: message, retry }), retry ? 'failed, retry requested' : 'failed', err);
    }
  }

  /**
   * A run its budget stopped goes back to the database, which holds the task (its sender is asked to
   * raise the budget) or fails it, as the sender chose; a task waiting for an answer too.
   */
  private async budgetSpent(budget: AbortController, submit: (outcome: OutcomeOf) => () => Promise<TaskStatus>,
    report: (call: () => Promise<Task | TaskStatus>, what: string, err?: unknown, why?: string) => Promise<void>, err?: unknown): Promise<void> {
    const why = (budget.signal.reason as Error).message;
    await report(submit({ error: why, retry: true }), 'stopped: the budget is spent', err, why);
  }

  /**
   * A run stopped by its signal. A claim that could not be confirmed in time is handed back (retried
   * until the API answers, fenced by its token); any other stop means the claim is no longer ours.
   */
  private async stopped(task: Task, signal: AbortSignal, log: Logger, started: number,
    report: (call: () => Promise<Task>, what: string, err?: unknown, why?: string) => Promise<void>): Promise<void> {
    const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
    if (!(signal.reason instanceof ClaimUnconfirmedError) || this.deps.stopping()) {
      log.info({ ms: Date.now() - started, reason }, 'stopped: the claim is no longer ours');
      return;
    }
    await report(() => this.deps.client.release(task.id, task.claim_token, reason), 'released: the claim could not be confirmed in time', undefined, reason);
  }

  /**
   * Reports an outcome; a refusal because the claim was lost (fencing) is logged, not thrown; a refusal
   * of the outputs is thrown, for run()'s refusal policy.
   */
  private async report(call: () => Promise<Task | TaskStatus>, log: Logger, started: number, what: string, err?: unknown, why?: string, task?: Task): Promise<void> {
    const tries = { count: 0 };
    try {
      const done = await this.untilRecorded(call, log, what, tries);
      const status = typeof done === 'string' ? done : done.status;
      const reason = why ?? (err instanceof Error ? err.message : err === undefined ? undefined : String(err));
      const line = { ms: Date.now() - started, status, ...(reason ? { reason } : {}), ...(err ? { err } : {}) };
      if (err || why) log.warn(line, what);
      else log.info(line, what);
    } catch (refusal) {
      // Completion refused for a missing required output: run() treats it as refused outputs.
      if (refusal instanceof MissingOutputsError) throw refusal;
      // A refusal that says the claim is no longer this agent's (errors.ts, `fenced`): dropped, not retried.
      if (refusal instanceof BatonError && batonCode(refusal.code)?.fenced) {
        // Tried again after an answer that never came: the first try may be what ended the claim.
        if (tries.count > 1 && task && await this.recordedEarlier(task)) {
          log.info({ ms: Date.now() - started, tries: tries.count }, `${what}: recorded by an earlier try, whose answer was lost`);
          return;
        }
        log.warn({ ms: Date.now() - started, code: refusal.code, reason: refusal.message }, 'late outcome refused: the claim was lost');
      } else {
        log.error({ err: refusal }, `could not report the task as ${what}`);
      }
    }
  }

  /**
   * An outcome is work done: a report that finds the API or its database away, or that the database
   * undid for now (isRetryable: a deadlock, say), is tried again with backoff and the same claim token,
   * until the database answers. Nobody can take the claim
   * while the database is away; once it is back, the answer is the outcome recorded, or a fenced
   * refusal (the claim lapsed meanwhile), which report() logs and drops. Only a stopped agent gives up.
   */
  private async untilRecorded<T>(call: () => Promise<T>, log: Logger, what: string, tries = { count: 0 }): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        tries.count += 1;
        return await call();
      } catch (err) {
        if (!isRetryable(err) || (this.deps.stopping() && attempt >= 3)) throw err;
        const wait = Math.min(maxReportRetryMs, 250 * 2 ** attempt);
        if (attempt === 0) log.warn({ err, retryInMs: wait }, `could not reach the API to report the task as ${what}; trying again`);
        await sleep(wait);
      }
    }
  }

  /**
   * Whether this claim's outcome is already in the task's history: the first change that ended the
   * claim (to pending or a final status) was made by this agent, not by the sweep or the sender. Only
   * this process held the claim's token, so it was this process's report.
   */
  private async recordedEarlier(task: Task): Promise<boolean> {
    const since = Date.parse(task.claimed_at ?? task.updated_at);
    const events = await this.deps.client.events(task.id).catch(() => []);
    const ended = events
      .filter((e) => Date.parse(e.at) >= since && (e.from_status === 'in_progress' || e.from_status === 'claimed')
        && (e.to_status === 'pending' || finalStatuses.includes(e.to_status as TaskStatus)))
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))[0];
    return ended?.actor === this.deps.agentId;
  }

  /** What the executor gets: the task, what it may read, and calls that act on the task as the agent. */
  private async context(task: Task, signal: AbortSignal, log: Logger, budget?: AbortController): Promise<ExecutorContext> {
    const { client, agentId } = this.deps;
    const parents = task.parent_task_id ? await client.ancestors(task.id) : [];
    const left = budget ? budgetLeft(await client.budget(task.id)) : undefined;
    // A program the executor runs reads what is left too.
    const env = left ? { ...this.deps.env, ...budgetEnv(left) } : this.deps.env;
    const dependencies = task.depends_on.length ? await client.dependencies(task.id) : [];
    const inputs: ResolvedArtifact[] = task.parent_task_id || task.input_artifacts.length || task.depends_on.length ? await client.inputs(task.id) : [];
    // The questions of this run whose answers the executor has had, so none is handed over twice.
    const handedOver = new Set<string>();
    // The budget spent by a run that had ended: the next step (a question, an answer) stops the run.
    let spentAfterRun: BudgetSpentError | undefined;
    const goOn = () => {
      if (spentAfterRun && budget && !budget.signal.aborted) {
        log.warn({ reason: spentAfterRun.message }, `stopping: ${spentAfterRun.message}`);
        budget.abort(spentAfterRun);
      }
    };
    return {
      task,
      attempt: task.attempts,
      agentId,
      parents,
      dependencies,
      inputs,
      input: (name) => inputs.filter((a) => a.name === name).at(-1),
      problems: task.problems ?? [],
      artifact: async (name, content, { mediaType } = {}) => {
        const attached = await client.attachArtifact(task.id, name, content, { mediaType, task });
        log.info({ artifact: name, bytes: attached.size_bytes, sha256: attached.sha256 }, 'attached an artifact');
        return attached;
      },
      peers: this.deps.peers(),
      env,
      signal,
      budget: left,
      log,
      progress: async (message, percent) => {
        await client.progress(task.id, message, percent);
        log.info({ percent }, `progress: ${message}`);
      },
      message: async (to, body) => {
        await client.send({ to, body, taskId: task.id });
      },
      ask: (question) => this.ask(task, question, signal, log, handedOver, goOn),
      answered: () => this.answered(task, signal, log, handedOver, goOn),
      usage: async (usage, { ended = false } = {}) => {
        await this.untilRecorded(() => client.recordUsage(task.id, task.claim_token, usage), log, 'usage recorded');
        this.deps.metrics()?.spent(usage);
        log.info({ model: usage.model, input: usage.inputTokens, output: usage.outputTokens, cached: usage.cachedTokens, costUsd: usage.costUsd, sessionId: usage.sessionId }, 'spent');
        if (!budget || !left) return;
        // What is left now, as the database counted it: spent, the run stops here.
        const now = await this.untilRecorded(() => client.budget(task.id), log, 'budget read');
        Object.assign(left, budgetLeft(now));
        const spent = now?.budgets.find((b) => b.spent_at);
        if (now?.spent && spent && !budget.signal.aborted) {
          const why = `the budget on task ${spent.task_id} is spent (${budgetAmounts(spent)})`;
          if (ended) {
            // The run that spent it had ended: its result stands, but it goes no further.
            if (!spentAfterRun) log.warn({ budgetTask: spent.task_id }, `${why}: the run that spent it had ended, and keeps its result`);
            spentAfterRun ??= new BudgetSpentError(why);
            return;
          }
          log.warn({ budgetTask: spent.task_id }, `stopping: ${why}`);
          budget.abort(new BudgetSpentError(why));
        }
      },
      handoff: (input) => client.handoff({ ...input, parentTaskId: task.id }),
      fanOut: async (items, join) => {
        const made = await client.fanOut(task.id, items, join);
        log.info({ tasks: made.tasks.length, join: made.join, mode: join?.mode ?? 'all' }, 'fanned out');
        return made;
      },
    };
  }

  /** Asks the sender and waits for the answer (the task is input_required meanwhile). */
  private async ask(task: Task, question: string, signal: AbortSignal, log: Logger, handedOver: Set<string>, goOn: () => void): Promise<string> {
    const { client } = this.deps;
    goOn();
    if (signal.aborted) throw signal.reason;
    await client.ask(task.id, question);
    const [asked] = await client.messages({ taskId: task.id, kind: 'question', limit: 1 });
    if (!asked) throw new Error(`the question on task ${task.id} was asked but cannot be read back`);
    log.info({ question }, 'asked the sender; waiting for input');
    handedOver.add(asked.id);
    return this.awaitAnswer(task.id, asked.id, signal);
  }

  /**
   * The answer to a question asked in this run by whoever holds the task as this agent (a command the
   * executor ran, such as `baton ask`) and not yet handed to the executor, waiting for it if need be;
   * undefined when there is none. What counts is the question, not the task's status when the executor
   * looks: an answer that came first has already put the task back in progress.
   */
  private async answered(task: Task, signal: AbortSignal, log: Logger, handedOver: Set<string>, goOn: () => void): Promise<string | undefined> {
    // The newest question asked as the agent; the database's own to the sender about a spent budget is
    // not the run's to wait for.
    const asked = (await this.deps.client.messages({ taskId: task.id, kind: 'question', limit: 5 }))
      .find((m) => (m.body as { budget?: unknown } | null)?.budget === undefined);
    const runStarted = Date.parse(task.claimed_at ?? task.updated_at);
    if (!asked || handedOver.has(asked.id) || Date.parse(asked.created_at) < runStarted) return undefined;
    handedOver.add(asked.id);
    goOn();
    log.info('the task has a question of this run; handing its answer over');
    return this.awaitAnswer(task.id, asked.id, signal);
  }

  /**
   * Until a run waiting for its answer looks again: `news` of its task by push (the answer moved it
   * on), or, as a safety net, every askSafetySeconds while push is up and every askPollSeconds
   * while it is not.
   */
  private async nextLook(news: Promise<void>, signal: AbortSignal): Promise<void> {
    const seconds = this.deps.pushUp() ? agentDefaults.askSafetySeconds : agentDefaults.askPollSeconds;
    const timer = new AbortController();
    await Promise.race([news, sleep(seconds * 1000, undefined, { signal: AbortSignal.any([signal, timer.signal]) }).catch(() => undefined)]);
    timer.abort();
  }

  /**
   * Waits for the answer to the question `askedId`; the task's slot is free meanwhile. An API or
   * database away while it waits (a restart, an upgrade, a cut network) is waited out: the question is
   * the database's, and the answer will be there when it is back, for this same run.
   */
  private async awaitAnswer(taskId: string, askedId: string, signal: AbortSignal): Promise<string> {
    const { client, outage } = this.deps;
    this.deps.waiting(taskId, true);
    try {
      while (!signal.aborted) {
        // Listened for before looking, so that news arriving while the look is under way is not missed.
        const news = new Promise<void>((resolve) => this.answerWaits.set(taskId, resolve));
        const answer = await client.messages({ taskId, kind: 'answer', limit: 1 }).then(([a]) => {
          outage.ok();
          return a;
        }, (err: unknown) => {
          if (!isRetryable(err)) throw err;
          outage.failed(err, 'could not look for an answer');
        });
        if (answer && answer.reply_to_id === askedId) {
          const body = answer.body as { text?: unknown };
          return typeof body.text === 'string' ? body.text : JSON.stringify(answer.body);
        }
        await this.nextLook(news, signal);
      }
      throw signal.reason ?? new Error('aborted while waiting for an answer');
    } finally {
      this.answerWaits.delete(taskId);
      this.deps.waiting(taskId, false);
    }
  }
}

/** The least left over a task's budgets, as the executor reads it. */
function budgetLeft(budget: TaskBudget | null): BudgetLeft | undefined {
  if (!budget) return undefined;
  return {
    ...(budget.tokens_left !== null ? { tokens: Math.max(0, budget.tokens_left) } : {}),
    ...(budget.usd_left !== null ? { usd: Math.max(0, budget.usd_left) } : {}),
  };
}

/** What is left, for a program the executor runs. */
function budgetEnv(left: BudgetLeft): Record<string, string> {
  return {
    ...(left.tokens !== undefined ? { BATON_BUDGET_TOKENS_LEFT: String(left.tokens) } : {}),
    ...(left.usd !== undefined ? { BATON_BUDGET_USD_LEFT: String(left.usd) } : {}),
  };
}

/** Why an agent cannot run a task, naming what it would need. */
function noExecutorReason(agentId: string, task: Task, executors: Executors): string {
  const taskType = typeof task.payload.task_type === 'string' ? task.payload.task_type : undefined;
  const wanted = [
    ...(taskType ? [`task_type "${taskType}"`] : []),
    ...(task.required_capabilities.length ? [`capabilities [${task.required_capabilities.join(', ')}]`] : []),
  ];
  const known = Object.keys(executors).join(', ') || 'none';
  return `agent ${agentId} has no executor for ${wanted.join(' or ') || 'a task without task_type'} (its executors: ${known}; add one, or a "*" executor)`;
}

/** The environment a command executor gets to act as the agent. */
export function executorEnv(options: AgentOptions): Record<string, string> {
  const key: Record<string, string> = options.publishableKey
    ? { SUPABASE_PUBLISHABLE_KEY: options.publishableKey } : { SUPABASE_ANON_KEY: agentApiKey(options) };
  return { SUPABASE_URL: options.url, ...key, BATON_AGENT_TOKEN: options.token };
}
