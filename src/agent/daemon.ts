/**
 * The agent daemon: registers and heartbeats, keeps a view of its peers, sweeps, claims what fits its
 * capacity, runs each task with its executor, and completes, fails or releases it.
 *
 *   const agent = createAgent(options); await agent.start(); … await agent.stop();
 */
import { setTimeout as sleep } from 'node:timers/promises';
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { BatonClient, createBatonClient } from '../client/agent.js';
import { agentApiKey, type AgentKeyOptions } from '../client/connection.js';
import { BatonError, isUnavailable, MissingOutputsError, OutputSchemaError, SupersededError } from '../errors.js';
import { intervalSeconds } from '../durations.js';
import type { ResolvedArtifact } from '../client/artifacts.js';
import { silentLogger } from '../logger.js';
import { finalStatuses, type AgentPresence, type Message, type Task, type TaskStatus } from '../schemas.js';
import { OutcomeBatcher } from './outcomes.js';
import { agentTopics, PushListener } from './push.js';
import {
  builtInJoin, JOIN_TASK_TYPE, RetryableError, runExecutor, selectExecutor, toResult, type ExecutorContext, type Executors,
} from './executors.js';
import { agentDefaults, checkSchedule, schedulePeriodSeconds } from './options.js';

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
  /** While push is up, claim on the poll only this often, in seconds (default 60). */
  slowPollSeconds?: number;
  /** Runs once for each task this agent sent that reached a final state. */
  onResult?: (task: Task, message: Message) => unknown;
  log?: Logger;
}

interface Running {
  task: Task;
  controller: AbortController;
  done: Promise<void>;
}

const fenced = new Set(['BT001', 'BT002', 'BT003', 'BT007']);

/** A peer that wakes at least this often (seconds) is a daemon, and takes its turn at the sweep. */
const sweeperRhythmSeconds = 60;
/** Where pg_cron runs the sweep, how often a daemon looks whether it still does. */
const scheduledSweepCheckMs = 10 * 60_000;
/** The longest wait between two tries at reporting an outcome while the API or database is away. */
const maxReportRetryMs = 5_000;

/** The longest rhythm the database accepts (baton_private.tg_agents__heard_from). */
const maxEverySeconds = 7 * 86_400;

export function createAgent(options: AgentOptions): BatonAgent {
  return new BatonAgent(options);
}

export class BatonAgent {
  readonly client: BatonClient;
  readonly id: string;
  private readonly outcomes: OutcomeBatcher;
  peers: AgentPresence[] = [];
  private readonly running = new Map<string, Running>();
  /** The running tasks that have not reported yet: their outcomes may join the next batch. */
  private readonly working = new Set<string>();
  private readonly log: Logger;
  private readonly schedules: ScheduledTask[] = [];
  private readonly poll: string;
  private readonly heartbeat: string;
  private stopping = false;
  private capacity = 1;
  private started = false;
  private polling: Promise<void> = Promise.resolve();
  private claiming: Promise<void> | undefined;
  private claimAgain = false;
  private lastClaimFull = false;
  private nextSweepAt = 0;
  private launched = 0;
  private tickLimit: number | undefined;
  private push: PushListener | undefined;
  /** The capabilities the agent's row holds (set here or by an operator): its broadcast topics. */
  private capabilities: string[] = [];
  private readonly wakeTimers = new Set<NodeJS.Timeout>();
  private lastPollClaim = 0;
  private beats = 0;
  /** When a claim failed on the way back, if one did: its answer may have been lost. */
  private suspectSince: number | undefined;
  /** A report that also claims is in flight. */
  private claimingAlong = false;
  /** Spreads the safety-net claims of many agents started together. */
  private readonly jitter = Math.random();
  /** This process, as the database knows it (begin_incarnation); a later process of the agent supersedes it. */
  private incarnation: string | undefined;
  private superseded = false;
  private markStopped!: () => void;
  /** Settles once the agent has stopped: by stop(), or on its own when a later process took over the agent. */
  readonly stopped = new Promise<void>((resolve) => { this.markStopped = resolve; });

  constructor(private readonly options: AgentOptions) {
    this.client = createBatonClient(options);
    this.id = this.client.agentId;
    // With room for more work when outcomes go out, the same request claims it.
    this.outcomes = new OutcomeBatcher(this.client, {
      moreComing: () => this.working.size > 0,
      want: (reporting) => {
        if (this.claiming || this.claimingAlong || this.stopping || this.drained() || this.suspectSince !== undefined
          || Object.keys(this.options.executors ?? {}).length === 0) return 0;
        const free = Math.min(this.capacity - this.running.size + reporting, (this.tickLimit ?? Infinity) - this.launched);
        if (free < 1) return 0;
        this.claimingAlong = true;
        return free;
      },
      claimed: (tasks, wanted) => {
        this.claimingAlong = false;
        this.lastClaimFull = tasks.length === wanted;
        if (tasks.length) this.log.debug({ tasks: tasks.length, wanted }, 'claimed along with a report');
        for (const task of tasks) {
          if (!this.stopping) this.launch(task);
          else void this.client.release(task.id, task.claim_token, 'released on shutdown').catch((err: unknown) => this.log.warn({ err, taskId: task.id }, 'could not release'));
        }
      },
      lost: (err) => {
        this.claimingAlong = false;
        // Its claims may have been made without the answer arriving: the next claim round looks.
        if (isUnavailable(err)) this.suspectSince ??= Date.now();
      },
    });
    this.log = (options.log ?? silentLogger).child({ agentId: this.id });
    this.poll = checkSchedule(options.poll ?? agentDefaults.poll, 'poll');
    this.heartbeat = checkSchedule(options.heartbeat ?? agentDefaults.heartbeat, 'heartbeat');
  }

  /** Tasks running now. */
  get runningTasks(): Task[] {
    return [...this.running.values()].map((r) => r.task);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.register();
    await this.beginIncarnation();
    await this.beat();
    if (this.stopping) return;
    // Its first turn at the sweep falls anywhere in its period: daemons started together spread out.
    this.nextSweepAt = Date.now() + this.sweepPeriodMs() * Math.random();
    this.schedules.push(
      cron.schedule(this.heartbeat, () => this.beat(), { noOverlap: true, name: `${this.id}-heartbeat` }),
      cron.schedule(this.poll, () => this.pollOnce(), { noOverlap: true, name: `${this.id}-poll` }),
    );
    if (this.options.push !== false) this.listen();
    await this.pollOnce();
    this.log.info({ capabilities: this.options.capabilities, maxConcurrent: this.capacity, poll: this.poll }, 'agent started');
  }

  /**
   * One round, for cron-driven agents: register, beat, sweep, claim what fits, run it, and keep claiming
   * as slots free while the queue gives work, up to `limit` tasks; then report and return.
   */
  async tick({ limit = agentDefaults.tickLimit }: { limit?: number } = {}): Promise<{ ran: number }> {
    this.tickLimit = limit;
    await this.register();
    await this.beat();
    await this.pollOnce();
    while (this.running.size > 0 || this.claiming) {
      await Promise.allSettled([...this.running.values()].map((r) => r.done));
      await this.claiming;
    }
    return { ran: this.launched };
  }

  /**
   * Stops claiming, lets running tasks finish within the grace period, releases the rest back to
   * pending, and marks the agent inactive.
   */
  async stop({ graceSeconds = this.options.graceSeconds ?? agentDefaults.graceSeconds } = {}): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    try {
      await this.windDown(graceSeconds);
    } finally {
      this.markStopped();
    }
  }

  private async windDown(graceSeconds: number): Promise<void> {
    for (const schedule of this.schedules) await schedule.destroy();
    await this.push?.stop();
    for (const timer of this.wakeTimers) clearTimeout(timer);
    await this.polling;
    await this.claiming;
    const all = () => Promise.allSettled([...this.running.values()].map((r) => r.done));
    if (this.running.size > 0) {
      this.log.info({ running: this.running.size, graceSeconds }, 'waiting for running tasks');
      await settledWithin(all(), graceSeconds * 1000);
    }
    for (const { task, controller } of [...this.running.values()]) {
      controller.abort(new Error('the agent is shutting down'));
      await this.client.release(task.id, task.claim_token, 'the agent shut down before finishing').then(
        () => this.log.info({ taskId: task.id }, 'released on shutdown'),
        (err: unknown) => this.log.warn({ taskId: task.id, err }, 'could not release on shutdown'),
      );
    }
    await settledWithin(all(), 2000);
    // A superseded process leaves the agent's row to the process that took it over.
    if (!this.superseded) {
      await this.client.heartbeat(undefined, { active: false, incarnation: this.incarnation })
        .catch((err: unknown) => this.log.warn({ err }, 'could not mark inactive'));
    }
    this.log.info('agent stopped');
  }

  /**
   * This process starts as the agent: whatever claims an earlier process left (killed, crashed, its
   * machine gone) go back at once by the database's rule, instead of waiting for their leases while
   * this process beats under the same id, and they stop counting against max_concurrent.
   */
  private async beginIncarnation(): Promise<void> {
    const { incarnation, ...handedBack } = await this.client.beginIncarnation();
    this.incarnation = incarnation;
    if (Object.values(handedBack).some((n) => n > 0)) {
      this.log.warn({ handedBack }, 'handed back the claims an earlier process of this agent left');
    }
  }

  /** A later process started as this agent and took over its claims: this one steps aside. */
  private standDown(reason: string): void {
    if (this.superseded) return;
    this.superseded = true;
    this.log.error({ reason }, 'a later process took over this agent; stopping (run one daemon per agent)');
    void this.stop({ graceSeconds: 0 });
  }

  /** Writes the agent's own row; its max_concurrent (set here or by an operator) is the capacity. */
  private async register(): Promise<void> {
    const { displayName, capabilities, skillsOffered, maxConcurrent } = this.options;
    const pollIntervalSeconds = this.options.everySeconds
      ?? Math.min(schedulePeriodSeconds(this.poll), schedulePeriodSeconds(this.heartbeat), maxEverySeconds);
    const row = await this.client.updateProfile({ displayName, capabilities, skillsOffered, maxConcurrent, pollIntervalSeconds });
    this.capacity = row.max_concurrent;
    this.capabilities = row.capabilities;
  }

  private async beat(): Promise<void> {
    try {
      // While push is up and nothing runs, an idle agent is heard through its safety-net claims (every
      // call that can write records a beat) and looks at its peers now and then: a hundred idle agents
      // cost a few requests a second in all.
      const idle = this.push?.up && this.running.size === 0;
      if (!idle || Date.now() - this.lastPollClaim >= this.slowPollMs()) await this.client.heartbeat(undefined, { incarnation: this.incarnation });
      await this.checkClaims(true);
      this.beats += 1;
      if (!idle || this.beats % 10 === 1) {
        const everyone = await this.client.discover();
        // An idle process sends no heartbeat to be refused; its own row says who runs the agent now.
        const me = everyone.find((p) => p.id === this.id);
        if (this.incarnation && me?.incarnation && me.incarnation !== this.incarnation) return this.standDown(`agent ${this.id} began again at ${me.incarnation_started_at}`);
        this.peers = everyone.filter((p) => p.id !== this.id);
      }
    } catch (err) {
      if (err instanceof SupersededError) return this.standDown(err.message);
      this.log.error({ err }, 'heartbeat failed');
    }
  }

  private pollOnce(): Promise<void> {
    if (this.stopping) return this.polling;
    this.polling = this.pollRound().catch((err: unknown) => this.log.error({ err }, 'poll failed'));
    return this.polling;
  }

  private async pollRound(): Promise<void> {
    if (this.options.sweep !== false && Date.now() >= this.nextSweepAt) {
      this.nextSweepAt = Date.now() + this.sweepPeriodMs();
      const { scheduled, ...report } = await this.client.sweep();
      if (scheduled) this.nextSweepAt = Date.now() + scheduledSweepCheckMs;
      if (Object.values(report).some((n) => n > 0)) this.log.info({ sweep: report }, 'swept');
    }
    await this.checkClaims(false);
    // While push is up, work and results arrive by themselves; the poll is only a safety net.
    if (this.push?.up && Date.now() - this.lastPollClaim < this.slowPollMs() * (0.9 + 0.2 * this.jitter)) return;
    this.lastPollClaim = Date.now();
    await this.deliverResults();
    await this.claimRound();
  }

  /**
   * The sweep is the same for everyone, and the database runs one at a time, so the fleet shares it:
   * each of n daemons sweeps about every n × sweepSeconds (jittered), and together they sweep about
   * every sweepSeconds whatever their number. Peers that wake less often (agents on a cron) are not
   * counted; where pg_cron runs the sweep, daemons leave it to pg_cron.
   */
  private sweepPeriodMs(): number {
    const sweepers = 1 + this.peers.filter((p) => (intervalSeconds(p.poll_interval) ?? Infinity) <= sweeperRhythmSeconds).length;
    return agentDefaults.sweepSeconds * 1000 * sweepers * (0.5 + Math.random());
  }

  private slowPollMs(): number {
    return (this.options.slowPollSeconds ?? agentDefaults.slowPollSeconds) * 1000;
  }

  /** Joins its topics: its own, its capabilities', and open work's. */
  private listen(): void {
    const topics = agentTopics({ id: this.id, capabilities: this.capabilities });
    const quietly = (work: Promise<void>) => void work.catch((err: unknown) => this.log.error({ err }, 'a push wake-up failed'));
    this.push = new PushListener(this.client, topics, {
      work: (tasks) => {
        if (this.stopping) return;
        quietly(this.claimRound());
        // A retry waits out its backoff: wake again when the first one is due.
        const due = Math.min(...tasks.map((t) => (t.not_before ? Date.parse(t.not_before) : Infinity)));
        if (Number.isFinite(due) && due > Date.now()) {
          const timer = setTimeout(() => { this.wakeTimers.delete(timer); if (!this.stopping) quietly(this.claimRound()); }, due - Date.now() + 50);
          timer.unref();
          this.wakeTimers.add(timer);
        }
      },
      news: (tasks) => {
        if (!this.stopping && tasks.some((t) => finalStatuses.includes(t.status as TaskStatus))) quietly(this.deliverResults());
      },
      up: () => { if (!this.stopping) quietly(this.claimRound().then(() => this.deliverResults())); },
    }, this.log);
    this.push.start();
  }

  /**
   * Claims up to the free capacity. Work-conserving: while claims come back full, every slot that frees
   * claims again at once instead of waiting for the next poll; a claim that comes back short means the
   * queue is drained, and the schedule takes over again.
   */
  private claimRound(): Promise<void> {
    if (this.claiming) {
      this.claimAgain = true;
      return this.claiming;
    }
    this.claiming = (async () => {
      do {
        this.claimAgain = false;
        // An agent without executors only sends work (and hears of results); it claims nothing.
        if (Object.keys(this.options.executors ?? {}).length === 0 || this.stopping || this.drained()) return;
        // Claims are made one round at a time, so none is in flight while this looks for lost ones.
        await this.reconcile();
        const free = this.capacity - this.running.size;
        if (free < 1) return;
        const claimed = await this.client.claimNext({ limit: free, start: true }).catch((err: unknown) => {
          if (isUnavailable(err)) this.suspectSince ??= Date.now();
          throw err;
        });
        this.lastClaimFull = claimed.length === free;
        for (const task of claimed) this.launch(task);
      } while (this.claimAgain && !this.stopping);
    })().finally(() => { this.claiming = undefined; });
    return this.claiming;
  }

  /** A tick stops claiming once it has run its share. */
  private drained(): boolean {
    return this.tickLimit !== undefined && this.launched >= this.tickLimit;
  }

  /** Stops work whose claim is no longer ours (cancelled, re-queued, reassigned); renews the rest. */
  private async checkClaims(renew: boolean): Promise<void> {
    const claims = [...this.running.values()].map(({ task }) => ({ taskId: task.id, claimToken: task.claim_token! }));
    for (const check of await this.client.checkClaims(claims, { renew })) {
      const run = this.running.get(check.task_id);
      if (run && !check.current) {
        this.log.info({ taskId: check.task_id, status: check.status }, 'claim no longer current; stopping its executor');
        run.controller.abort(new Error(`the task is now ${check.status ?? 'gone'}`));
      }
    }
  }

  private async deliverResults(): Promise<void> {
    if (!this.options.onResult) return;
    const messages = await this.client.messages({ unread: true, kind: 'result', limit: 100 });
    for (const message of messages.reverse()) {
      if (!message.task_id) continue;
      try {
        await this.options.onResult(await this.client.getTask(message.task_id), message);
      } catch (err) {
        this.log.error({ err, taskId: message.task_id }, 'onResult failed; it will run again');
        continue;
      }
      await this.client.markRead([message.id]);
    }
  }

  private launch(task: Task): void {
    // The same task again: its earlier claim lapsed while that run went on, and this claim supersedes
    // it (the earlier run's outcome would be refused anyway).
    this.running.get(task.id)?.controller.abort(new Error('the task was claimed again after this claim lapsed'));
    const controller = new AbortController();
    const run: Running = { task, controller, done: Promise.resolve() };
    this.launched += 1;
    this.working.add(task.id);
    run.done = this.execute(task, controller.signal).finally(() => {
      this.working.delete(task.id);
      if (this.running.get(task.id) === run) this.running.delete(task.id);
      if (this.lastClaimFull && !this.stopping) {
        this.claimRound().catch((err: unknown) => this.log.error({ err }, 'claim failed'));
      }
    });
    this.running.set(task.id, run);
  }

  private async execute(task: Task, signal: AbortSignal): Promise<void> {
    const log = this.log.child({ taskId: task.id, attempt: task.attempts });
    const started = Date.now();
    log.info({ title: task.title, from: task.from_agent }, 'claimed');
    const chosen = selectExecutor({ [JOIN_TASK_TYPE]: builtInJoin, ...this.options.executors }, task);
    if (!chosen) {
      // Not this agent's kind of work: rejected if addressed to it, else left for a capable peer.
      const reason = noExecutorReason(this.id, task, this.options.executors ?? {});
      await this.report(task.id, log, started, () => this.client.decline(task.id, task.claim_token, reason),
        task.to_agent === this.id ? 'declined: rejected, no executor' : 'declined: left for another agent, no executor', undefined, reason);
      return;
    }
    try {
      const parents = task.parent_task_id ? await this.client.ancestors(task.id) : [];
      const dependencies = task.depends_on.length ? await this.client.dependencies(task.id) : [];
      const inputs = task.parent_task_id || task.input_artifacts.length || task.depends_on.length ? await this.client.inputs(task.id) : [];
      const value = await runExecutor(chosen.executor, task, this.context(task, parents, dependencies, inputs, signal, log), this.executorEnv());
      if (signal.aborted) return log.info({ ms: Date.now() - started }, 'stopped: the claim is no longer ours');
      const result = toResult(value);
      // A result.handoff becomes the follow-up task in the same transaction as the completion.
      await this.report(task.id, log, started, () => this.outcomes.submit({ taskId: task.id, claimToken: task.claim_token, result }), result.handoff ? 'completed, follow-up handed off' : 'completed');
    } catch (err) {
      if (signal.aborted) return log.info({ ms: Date.now() - started, reason: String(signal.reason?.message ?? signal.reason) }, 'stopped: the claim is no longer ours');
      if (err instanceof OutputSchemaError || err instanceof MissingOutputsError) return this.refuseOutputs(task, err, log, started);
      // An API or database away mid-task is no fault of the task: it runs again.
      const retry = err instanceof RetryableError || isUnavailable(err);
      const message = err instanceof Error ? err.message : String(err);
      await this.report(task.id, log, started, () => this.outcomes.submit({ taskId: task.id, claimToken: task.claim_token, error: message, retry }), retry ? 'failed, retry requested' : 'failed', err);
    }
  }

  /**
   * Outputs refused (a schema problem, or a required output missing): the executor runs once more
   * with the problems in its context, counting as an attempt; refused again, the task fails with them.
   */
  private async refuseOutputs(task: Task, err: OutputSchemaError | MissingOutputsError, log: Logger, started: number): Promise<void> {
    const problems = err instanceof OutputSchemaError ? err.problems : [{ path: '', message: err.message }];
    // The database turns a retry into a final failure once attempts run out.
    const retry = !task.problems?.length;
    await this.report(task.id, log, started, () => this.outcomes.submit({ taskId: task.id, claimToken: task.claim_token, error: `outputs refused: ${err.message}`, retry, problems }),
      retry ? 'outputs refused; running again with the problems' : 'outputs refused again; failed', err);
  }

  /**
   * Reports an outcome and returns the task as it now stands. A refusal because the claim was lost
   * (fencing) is logged, not thrown; a refusal of the outputs is thrown for the refusal policy.
   */
  private async report(taskId: string, log: Logger, started: number, call: () => Promise<Task | TaskStatus>, what: string, err?: unknown, why?: string): Promise<TaskStatus | undefined> {
    this.working.delete(taskId);
    try {
      const done = await this.persist(call, log, what);
      const status = typeof done === 'string' ? done : done.status;
      const reason = why ?? (err instanceof Error ? err.message : err === undefined ? undefined : String(err));
      const line = { ms: Date.now() - started, status, ...(reason ? { reason } : {}), ...(err ? { err } : {}) };
      if (err || why) log.warn(line, what);
      else log.info(line, what);
      return status;
    } catch (refusal) {
      if (refusal instanceof MissingOutputsError) throw refusal;
      if (refusal instanceof BatonError && fenced.has(refusal.code)) {
        log.warn({ ms: Date.now() - started, code: refusal.code, reason: refusal.message }, 'late outcome refused: the claim was lost');
      } else {
        log.error({ err: refusal }, `could not report the task as ${what}`);
      }
      return undefined;
    }
  }

  /**
   * An outcome is work done: a report that finds the API or its database away (the gateway or Postgres
   * restarting, the network gone: isUnavailable) is tried again with backoff and the same claim token,
   * until the database answers. Nobody can take the claim while the database is away; once it is back,
   * the answer is the outcome recorded, or a fenced refusal (the claim lapsed meanwhile), which report()
   * logs and drops. Only a stopped agent past its grace period gives up.
   */
  private async persist<T>(call: () => Promise<T>, log: Logger, what: string): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await call();
      } catch (err) {
        if (!isUnavailable(err) || (this.stopping && attempt >= 3)) throw err;
        const wait = Math.min(maxReportRetryMs, 250 * 2 ** attempt);
        if (attempt === 0) log.warn({ err, retryInMs: wait }, `could not reach the API to report the task as ${what}; trying again`);
        await sleep(wait);
      }
    }
  }

  /**
   * A claim whose answer was lost (the connection dropped after the database made it) is held by this
   * agent without its knowing. After a failed claim, the next round first hands back the tasks it holds
   * but is not running (claims are made one round at a time, so none is in flight then).
   */
  private async reconcile(): Promise<void> {
    // Not while a report that claims is on its way: what it claimed is not launched yet.
    if (this.suspectSince === undefined || this.claimingAlong) return;
    const since = this.suspectSince;
    const held = await this.client.listTasks({ box: 'mine', status: ['claimed', 'in_progress'], limit: 1000 });
    for (const task of held) {
      if (task.claimed_by !== this.id || this.running.has(task.id)) continue;
      await this.client.release(task.id, task.claim_token, 'the agent never got the answer to its claim (the connection dropped); handed back').then(
        () => this.log.warn({ taskId: task.id }, 'released a claim whose answer was lost'),
        (err: unknown) => this.log.warn({ taskId: task.id, err }, 'could not release a claim whose answer was lost'),
      );
    }
    if (this.suspectSince === since) this.suspectSince = undefined;
  }

  private context(task: Task, parents: Task[], dependencies: Task[], inputs: ResolvedArtifact[], signal: AbortSignal, log: Logger): ExecutorContext {
    const client = this.client;
    return {
      task,
      attempt: task.attempts,
      agentId: this.id,
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
      peers: this.peers,
      signal,
      log,
      progress: async (message, percent) => {
        await client.progress(task.id, message, percent);
        log.info({ percent }, `progress: ${message}`);
      },
      message: async (to, body) => {
        await client.send({ to, body, taskId: task.id });
      },
      ask: (question) => this.ask(task, question, signal, log),
      handoff: (input) => client.handoff({ ...input, parentTaskId: task.id }),
      fanOut: async (inputs, join) => {
        const made = await client.fanOut(task.id, inputs, join);
        log.info({ tasks: made.tasks.length, join: made.join, mode: join?.mode ?? 'all' }, 'fanned out');
        return made;
      },
    };
  }

  private async ask(task: Task, question: string, signal: AbortSignal, log: Logger): Promise<string> {
    await this.client.ask(task.id, question);
    const [asked] = await this.client.messages({ taskId: task.id, kind: 'question', limit: 1 });
    log.info({ question }, 'asked the sender; waiting for input');
    while (!signal.aborted) {
      const [answer] = await this.client.messages({ taskId: task.id, kind: 'answer', limit: 1 });
      if (answer && answer.reply_to_id === asked?.id) {
        const body = answer.body as { text?: unknown };
        return typeof body.text === 'string' ? body.text : JSON.stringify(answer.body);
      }
      await sleep(agentDefaults.askPollSeconds * 1000, undefined, { signal }).catch(() => undefined);
    }
    throw signal.reason ?? new Error('aborted while waiting for an answer');
  }

  private executorEnv(): Record<string, string> {
    const key: Record<string, string> = this.options.publishableKey
      ? { SUPABASE_PUBLISHABLE_KEY: this.options.publishableKey } : { SUPABASE_ANON_KEY: agentApiKey(this.options) };
    return { SUPABASE_URL: this.options.url, ...key, BATON_AGENT_TOKEN: this.options.token };
  }
}

/** Waits for `work` to settle, at most `ms`, leaving no timer behind to keep the process alive. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([work, sleep(ms, undefined, { signal: timer.signal }).catch(() => undefined)]);
  timer.abort();
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
