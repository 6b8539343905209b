/**
 * The agent daemon: one loop that alone decides when to claim. It claims up to its free capacity, then
 * waits on one wake-up: a push (work arrived), a freed slot, the poll timer, or a stop. Push, timers and
 * finished tasks only ring that bell. Beside the loop run the heartbeat (Upkeep), each task
 * (TaskRunner), and the reporter (OutcomeBatcher), which reports outcomes and, when the loop's rule
 * allows, claims along in the same request and hands what it claimed back to the loop.
 *
 *   const agent = createAgent(options); await agent.start(); … await agent.stop();
 */
import type http from 'node:http';
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { BatonClient, createBatonClient } from '../client/agent.js';
import { ConfigError } from '../config.js';
import { isLate, isUnavailable, SupersededError, TransientError } from '../errors.js';
import { silentLogger } from '../logger.js';
import type { AgentPresence, Task } from '../schemas.js';
import { agentDefaults, checkSchedule, schedulePeriodSeconds, type AgentOptions } from './options.js';
import { Bell, settledWithin } from './bell.js';
import { OutageLog } from './outage.js';
import { OutcomeBatcher } from './outcomes.js';
import { agentTopics, listenForWork, pushRetryMs, type PushListener } from './push.js';
import { ClaimUnconfirmedError, executorEnv, TaskRunner } from './runner.js';
import { intervalSeconds } from '../durations.js';
import { deliverResults } from './results.js';
import { checkClaims, type ClaimHold, Upkeep } from './upkeep.js';
import { onRequestError } from '../client/http.js';
import { DaemonMetrics } from '../telemetry/metrics.js';
import { untraced } from '../telemetry/tracing.js';

/**
 * How long push may stay down while the API answers before the daemon listens again on a new
 * connection. realtime-js rejoins by itself within about 10 s of a reconnect; this is for a join it
 * lost (seen once in a loaded full run of the suite: push down 40 s after a gateway restart).
 */
const pushStuckMs = 20_000;
/**
 * While push is down (refused for a quota, or its joins not answered), a poll that finds nothing, and
 * one the API was too slow to answer, waits about twice as long before the next (from 5 s, jittered),
 * up to this: a fleet that polls stays a few requests a second in all, and a busy API is not pressed.
 */
const SPACED_POLL_MAX_MS = 30_000;
const spacedPollMs = (misses: number) => Math.min(SPACED_POLL_MAX_MS, 2_500 * 2 ** misses) * (0.75 + 0.5 * Math.random());
/**
 * How far into its schedule's gap each daemon's wake-ups come, at most: its own fraction of the gap
 * (chosen at random when it starts), so that a thousand daemons on the default schedules spread their
 * polls over five seconds and their heartbeats over thirty instead of calling all at once.
 */
const SPREAD_MAX_MS = 30_000;
/** How long the poll claims on every turn after the safety net found work push had not announced. */
const LOSSY_PUSH_MS = 5 * 60_000;
/** After an outage, each daemon listens again within this much of the API's return (at random). */
const RECOVERY_SPREAD_MS = 5_000;
/** The first pause in claims when what does the work cannot be reached, and the longest. */
const AWAY_PAUSE_MS = 5_000;
const AWAY_PAUSE_MAX_MS = 60_000;

interface Running {
  task: Task;
  controller: AbortController;
  done: Promise<void>;
  /** Its outcome is on its way: it will not report again, and its slot frees with that report. */
  reported: boolean;
  /** It waits for an answer to its question: it holds no slot meanwhile (nor in the database). */
  waiting: boolean;
  /**
   * Until when (this process's clock) the database holds the claim, as it last said (check_claims'
   * hold_seconds added to when that check was sent), and how long that hold was; no `until` while it
   * cannot lapse (a question waiting).
   */
  hold: ClaimHold;
}

export type { AgentOptions };

export function createAgent(options: AgentOptions): BatonAgent {
  return new BatonAgent(options);
}

export class BatonAgent {
  readonly client: BatonClient;
  readonly id: string;
  /** Settles once the agent has stopped: by stop(), or on its own when a later process took over the agent. */
  readonly stopped: Promise<void>;
  private readonly log: Logger;
  private readonly poll: string;
  private readonly heartbeat: string;
  /** The longest gap of each schedule, in seconds. */
  private readonly periods: { poll: number; heartbeat: number };
  private readonly upkeep: Upkeep;
  private readonly runner: TaskRunner;
  private readonly reporter: OutcomeBatcher;
  private readonly bell = new Bell();
  private readonly outage: OutageLog;
  private readonly running = new Map<string, Running>();
  private readonly schedules: ScheduledTask[] = [];
  /** Spreads the safety-net claims of many agents started together. */
  private readonly jitter = Math.random();
  /** The scheduled beat under way, if one is. */
  private beating: Promise<unknown> | undefined;
  private markStopped!: () => void;

  // What changes as it runs.
  private starting = false;
  private stopping = false;
  /** How many tasks it may hold (its row's max_concurrent) and the capabilities it listens for. */
  private profile = { capacity: 1, capabilities: [] as string[], everySeconds: 0 };
  private fenceTimer: NodeJS.Timeout | undefined;
  private push: PushListener | undefined;
  private metrics: DaemonMetrics | undefined;
  private metricsServer: http.Server | undefined;
  private stopCountingErrors: (() => void) | undefined;
  private loopDone: Promise<void> = Promise.resolve();
  /** The claim on its way, the loop's or the reporter's: there is one at a time. */
  private claiming: Promise<void> | undefined;
  /** Push down since it was last up: how often it was listened to again, and when next. */
  private pushRetry = { failures: 0, until: 0 };
  private claims = {
    /** The last claim filled every slot it asked for: a slot that frees claims again at once. */
    lastFull: false,
    /** When a claim failed on the way back, if one did: its answer may have been lost. */
    suspectSince: undefined as number | undefined,
    launched: 0,
    /** A tick stops claiming once it has run this many. */
    limit: Infinity,
    lastOnPoll: 0,
    /** The claim under way is the safety net's, made while push was up. */
    safetyNet: false,
    /** Until then, the poll claims every time even while push is up: push missed work lately. */
    lossyUntil: 0,
    /** The claim under way is the poll's, made while push is down. */
    downPoll: false,
    /**
     * Polls in a row that found nothing while push was down, or that the API was too slow to answer;
     * no poll before `idleUntil`.
     */
    idlePolls: 0,
    idleUntil: 0,
    /** No claims before this time: what does the work could not be reached (UnavailableError). */
    pausedUntil: 0,
    pauseMs: 0,
  };
  /** The pause before news whose handler failed is delivered again (0 while deliveries succeed). */
  private redeliverMs = 0;

  constructor(private readonly options: AgentOptions) {
    this.client = createBatonClient(options);
    this.id = this.client.agentId;
    this.stopped = new Promise<void>((resolve) => { this.markStopped = resolve; });
    this.log = (options.log ?? silentLogger).child({ agentId: this.id });
    this.poll = checkSchedule(options.poll ?? agentDefaults.poll, 'poll');
    this.heartbeat = checkSchedule(options.heartbeat ?? agentDefaults.heartbeat, 'heartbeat');
    this.periods = { poll: schedulePeriodSeconds(this.poll), heartbeat: schedulePeriodSeconds(this.heartbeat) };
    this.outage = new OutageLog(this.log, () => this.recovered());
    this.upkeep = new Upkeep(this.client, this.id, this.log, this.outage, () => void this.stop({ graceSeconds: 0 }));
    this.reporter = new OutcomeBatcher(this.client, {
      moreComing: () => [...this.running.values()].some((r) => !r.reported),
      claimable: (reporting) => this.claimable(reporting),
      claimed: (request, wanted) => void this.track(request.then((tasks) => {
        if (tasks.length) this.log.debug({ tasks: tasks.length, wanted }, 'claimed along with a report');
        return tasks;
      }), wanted).catch((err: unknown) => this.outage.failed(err, 'a claim made with a report failed')),
    });
    this.runner = new TaskRunner({
      client: this.client, agentId: this.id, executors: options.executors ?? {}, reporter: this.reporter, log: this.log,
      env: executorEnv(options), peers: () => this.upkeep.peers, stopping: () => this.stopping, metrics: () => this.metrics,
      pushUp: () => Boolean(this.push?.up),
      waiting: (taskId, waiting) => {
        const run = this.running.get(taskId);
        if (!run) return;
        run.waiting = waiting;
        // Asked, the task waits in input_required, which never lapses; answered, its lease starts again
        // (until the next check says how long the database holds it).
        run.hold = waiting ? {} : leaseHold(run.task);
        if (waiting) this.bell.ring('slot');
      },
      executorAway: (away, why) => this.executorAway(away, why),
      outage: this.outage,
    });
  }

  /** Tasks running now. */
  get runningTasks(): Task[] {
    return [...this.running.values()].map((r) => r.task);
  }

  /** The other agents, as of the last look. */
  get peers(): AgentPresence[] {
    return this.upkeep.peers;
  }

  /**
   * Starts all or nothing: what can fail on this machine (the metrics port) is taken before the agent
   * is heard from at all, and a failure after that stops everything already started before it throws,
   * so a process never beats without claiming.
   */
  async start(): Promise<void> {
    if (this.schedules.length || this.stopping || this.starting) return;
    this.starting = true;
    if (this.options.metricsPort !== undefined) await this.serveMetrics(this.options.metricsPort);
    try {
      await this.throughSlowStart(() => untraced(async () => {
        await this.register();
        // What it handed back may be claimed after one of the agent's wake-ups: the loop wakes for it then.
        const claimableAt = await this.upkeep.begin();
        if (claimableAt) this.bell.ringAt('work', Date.parse(claimableAt) + 50);
      }));
      if (this.stopping) return;
      await this.beat();
      if (this.stopping) return;
      this.upkeep.spreadFirstSweep();
      // node-cron's own lines go to the daemon's log, not raw to the console.
      const logger = cronLogger(this.log);
      // Each wake-up at this daemon's own offset into its schedule's gap (the schedules keep their
      // rhythm): a fleet on one schedule otherwise calls the API in the same second, every one of them.
      this.schedules.push(
        cron.schedule(this.heartbeat, () => this.offset(this.heartbeat, () => this.beatAlone()), { name: `${this.id}-heartbeat`, logger }),
        cron.schedule(this.poll, () => this.offset(this.poll, () => this.bell.ring('poll')), { name: `${this.id}-poll`, logger }),
      );
      if (this.options.push !== false) this.listen();
      this.fenceTimer = setInterval(() => this.fence(), 500).unref();
      this.bell.ring('poll');
      await new Promise<void>((firstTurn) => { this.loopDone = this.loop(false, firstTurn); });
    } catch (err) {
      this.log.error({ err }, 'could not start; stopping');
      await this.stop({ graceSeconds: 0 });
      throw err;
    }
    this.log.info({ capabilities: this.options.capabilities, maxConcurrent: this.profile.capacity, poll: this.poll }, 'agent started');
  }

  /**
   * One round, for cron-driven agents: register, beat, sweep, claim what fits, run it, and keep claiming
   * as slots free while the queue gives work, up to `limit` tasks; then report and return.
   */
  async tick({ limit = agentDefaults.tickLimit }: { limit?: number } = {}): Promise<{ ran: number }> {
    this.claims.limit = limit;
    await untraced(() => this.register());
    await this.beat();
    this.bell.ring('poll');
    await this.loop(true);
    return { ran: this.claims.launched };
  }

  /**
   * Stops claiming, lets running tasks finish within the grace period, releases the rest back to
   * pending, and marks the agent inactive.
   */
  async stop({ graceSeconds = this.options.graceSeconds ?? agentDefaults.graceSeconds } = {}): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.bell.ring('stop');
    clearInterval(this.fenceTimer);
    try {
      for (const schedule of this.schedules) await schedule.destroy();
      await this.push?.stop();
      this.metricsServer?.close();
      this.stopCountingErrors?.();
      this.bell.silence();
      await this.loopDone;
      await this.claiming;
      const all = () => Promise.allSettled([...this.running.values()].map((r) => r.done));
      if (this.running.size > 0) {
        this.log.info({ running: this.running.size, graceSeconds }, 'waiting for running tasks');
        await settledWithin(all(), graceSeconds * 1000);
      }
      for (const { task, controller } of [...this.running.values()]) {
        controller.abort(new Error('the agent is shutting down'));
        await this.release(task, 'the agent shut down before finishing', 'released on shutdown');
      }
      await settledWithin(all(), 2000);
      await untraced(() => this.upkeep.markInactive());
      this.log.info('agent stopped');
    } finally {
      this.markStopped();
    }
  }

  /**
   * The loop. Each turn does what its wake-ups ask (the poll: a turn at the sweep, the claims checked,
   * a safety-net claim; work: a claim; a freed slot: a claim while the queue gives work; results: the
   * sender's results delivered), then waits for the next. A tick returns once nothing runs.
   */
  private async loop(once: boolean, turned?: () => void): Promise<void> {
    while (!this.stopping) {
      const wakes = this.bell.take();
      try {
        // The loop's own calls (sweep, claims) belong to no task's trace; each task's spans start from
        // the context it was handed off in (TaskRunner).
        await untraced(async () => {
          let claim = wakes.has('work') || (wakes.has('slot') && this.claims.lastFull);
          if (wakes.has('poll')) {
            const pushUp = Boolean(this.push?.up);
            const polled = await this.pollRound();
            // The safety net claims on its own, while push is up: what it finds, push did not announce.
            this.claims.safetyNet = polled && pushUp && !claim;
            this.claims.downPoll = polled && this.push !== undefined && !pushUp && !claim;
            claim = polled || claim;
          }
          if (wakes.has('results')) await this.deliver();
          if (claim) await this.claimFree();
          this.claims.safetyNet = false;
          this.claims.downPoll = false;
        });
        this.outage.ok();
      } catch (err) {
        if (err instanceof SupersededError) this.upkeep.superseded(err.message);
        else if (this.outage.failed(err, 'poll failed') === 'slow') this.spacePolls(false);
      }
      turned?.();
      if (once && this.running.size === 0 && !this.bell.pending) return;
      await this.bell.wait();
    }
    turned?.();
  }

  /** The poll's turn; says whether it claims (while push is up, only as a slow safety net). */
  private async pollRound(): Promise<boolean> {
    if (this.options.sweep !== false) await this.upkeep.sweepIfDue();
    await checkClaims(this.client, this.running, false, this.log);
    // The API answers: push that has stayed down meanwhile is listened to again, on a new connection,
    // once its wait is over (pushRetryMs, doubling while it stays down); not while Realtime refuses it
    // for a quota, where the listener joins again after its own wait.
    if (this.push && !this.push.refused && this.push.downForMs > pushStuckMs && Date.now() >= this.pushRetry.until) {
      this.pushRetry.failures += 1;
      this.pushRetry.until = Date.now() + pushRetryMs(this.pushRetry.failures);
      this.relisten();
    }
    if (this.push?.up) this.pushRetry = { failures: 0, until: 0 };
    if (this.push?.up && Date.now() >= this.claims.lossyUntil && Date.now() - this.claims.lastOnPoll < this.slowPollMs() * (0.9 + 0.2 * this.jitter)) return false;
    // Push down, or the API slow: polls that find nothing or no answer space out (spacePolls).
    if (Date.now() < this.claims.idleUntil) return false;
    this.claims.lastOnPoll = Date.now();
    await this.deliver();
    return true;
  }

  /**
   * Delivers the results of, and questions on, the tasks this agent sent. News whose handler failed (a
   * gateway restarting, say) is delivered again after a pause, 5 s doubling up to the slow poll, not
   * left to the safety-net poll a minute away.
   */
  private async deliver(): Promise<void> {
    if (!(await deliverResults(this.client, this.options, this.log))) {
      this.redeliverMs = 0;
      return;
    }
    this.redeliverMs = Math.min(Math.max(this.redeliverMs * 2, AWAY_PAUSE_MS), this.slowPollMs());
    this.bell.ringAt('results', Date.now() + this.redeliverMs);
  }

  /**
   * How many tasks the agent may claim now, `freeing` slots being about to free with a report: the one
   * rule for the loop and for a report that claims along. None while a claim is on its way, while a lost
   * answer is not yet reconciled, when stopping, at a tick's limit, or without executors (an agent
   * without them only sends work).
   */
  private claimable(freeing = 0): number {
    if (this.stopping || this.claiming || this.claims.suspectSince !== undefined || !Object.keys(this.options.executors ?? {}).length) return 0;
    if (Date.now() < this.claims.pausedUntil) return 0;
    return Math.max(0, Math.min(this.profile.capacity - this.working + freeing, this.claims.limit - this.claims.launched));
  }

  /**
   * What does the work (a gateway, a remote agent) could not be reached: the task went back, and the
   * agent claims nothing for 5 s, doubling to a minute while it stays away; the next run that reaches it
   * ends the pause's growth.
   */
  private executorAway(away: boolean, why?: string): void {
    if (!away) {
      this.claims.pauseMs = 0;
      return;
    }
    this.claims.pauseMs = Math.min(Math.max(this.claims.pauseMs * 2, AWAY_PAUSE_MS), AWAY_PAUSE_MAX_MS);
    const until = Date.now() + this.claims.pauseMs;
    this.claims.pausedUntil = until;
    this.log.warn({ pauseMs: this.claims.pauseMs, why }, 'what does the work cannot be reached: the task is handed back, and the agent claims again after a pause');
    // The timer ends the pause, not the clock: Node may fire it a few milliseconds before Date.now()
    // reaches `until` (its loop time is read once per turn), and a claim refused then would wait for
    // the slow poll.
    setTimeout(() => {
      if (this.claims.pausedUntil === until) this.claims.pausedUntil = 0;
      this.bell.ring('work');
    }, this.claims.pauseMs).unref();
  }

  /** The tasks that hold a slot: those running, less those waiting for an answer. */
  private get working(): number {
    let waiting = 0;
    for (const run of this.running.values()) if (run.waiting) waiting += 1;
    return this.running.size - waiting;
  }

  /** Claims up to the free capacity, once the claim on its way (if any) has answered. */
  private async claimFree(): Promise<void> {
    await this.claiming;
    await this.reconcile();
    const free = this.claimable();
    if (free > 0) await this.track(this.client.claimNext({ limit: free, start: true }), free);
  }

  /**
   * Every claim passes here, the loop's and the reporter's: what it claimed is launched; a claim that
   * failed on the way back may have been made without its answer arriving, so the next claim first
   * looks for such tasks. Work-conserving: a claim that came back full lets the next freed slot claim.
   */
  private track(request: Promise<Task[]>, wanted: number): Promise<void> {
    const safetyNet = this.claims.safetyNet;
    const downPoll = this.claims.downPoll;
    const settled = request.then((tasks) => {
      this.claims.lastFull = tasks.length === wanted;
      if (downPoll || tasks.length) this.spacePolls(tasks.length > 0);
      if (safetyNet && tasks.length) this.pushMissed(tasks.length);
      for (const task of tasks) {
        if (this.stopping) void this.release(task, 'released on shutdown', 'released on shutdown');
        else this.launch(task);
      }
    }, (err: unknown) => {
      if (isUnavailable(err)) this.claims.suspectSince ??= Date.now();
      if (err instanceof SupersededError) this.upkeep.superseded(err.message);
      throw err;
    }).finally(() => { this.claiming = undefined; });
    this.claiming = settled.catch(() => undefined);
    return settled;
  }

  /**
   * The safety net found work that push, up all the while, had not announced: Realtime may be dropping
   * messages (hosted drops broadcasts while a project is over its plan's messages per second, and any
   * larger than its payload limit). The poll claims on every turn for LOSSY_PUSH_MS; said once a spell.
   */
  private pushMissed(tasks: number): void {
    if (Date.now() >= this.claims.lossyUntil) {
      this.log.warn({ tasks, forMinutes: LOSSY_PUSH_MS / 60_000, poll: this.poll },
        'the safety-net poll found work push had not announced: Realtime may be dropping messages (a plan\'s messages per second?); claiming on every poll for a while');
    }
    this.claims.lossyUntil = Date.now() + LOSSY_PUSH_MS;
  }

  private launch(task: Task): void {
    // The same task again: its earlier claim lapsed while that run went on, and this claim supersedes
    // it (the earlier run's outcome would be refused anyway).
    this.running.get(task.id)?.controller.abort(new Error('the task was claimed again after this claim lapsed'));
    const run: Running = { task, controller: new AbortController(), done: Promise.resolve(), reported: false, waiting: false, hold: leaseHold(task) };
    this.claims.launched += 1;
    run.done = this.runner.run(task, run.controller.signal, () => { run.reported = true; }).finally(() => {
      if (this.running.get(task.id) === run) this.running.delete(task.id);
      this.bell.ring('slot');
    });
    this.running.set(task.id, run);
  }

  /**
   * A claim whose answer was lost (the connection dropped after the database made it) is held by this
   * process without its knowing. Before the next claim, the claims this process made but is not running
   * go back; those of another process of the agent, or made by hand, are not this process's to touch.
   */
  private async reconcile(): Promise<void> {
    const since = this.claims.suspectSince;
    if (since === undefined) return;
    const held = await this.client.listTasks({ box: 'mine', status: ['claimed', 'in_progress'], limit: 1000 });
    for (const task of held) {
      if (task.claimed_by === this.id && task.claim_incarnation === this.upkeep.incarnation && !this.running.has(task.id)) {
        await this.release(task, 'the agent never got the answer to its claim (the connection dropped); handed back', 'released a claim whose answer was lost');
      }
    }
    if (this.claims.suspectSince === since) this.claims.suspectSince = undefined;
  }

  private async release(task: Task, reason: string, logged: string): Promise<void> {
    await this.client.release(task.id, task.claim_token, reason).then(
      () => this.log.info({ taskId: task.id }, logged),
      (err: unknown) => this.log.warn({ taskId: task.id, err }, `could not release (${logged})`),
    );
  }

  private async register(): Promise<void> {
    this.profile = await this.upkeep.register(this.options, this.periods);
  }

  /** The agent's metrics for Prometheus, at /metrics on `port`. */
  private async serveMetrics(port: number): Promise<void> {
    this.metrics = new DaemonMetrics(this.client, {
      running: () => this.running.size, capacity: () => this.profile.capacity, pushUp: () => Boolean(this.push?.up),
    });
    try {
      this.metricsServer = await this.metrics.serve(port);
    } catch (err) {
      const taken = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
      throw new ConfigError(taken
        ? `cannot serve metrics on port ${port}: another process listens there (EADDRINUSE); choose another --metrics-port (metricsPort), or 0 for a free one`
        : `cannot serve metrics on port ${port}: ${(err as Error).message}`);
    }
    this.stopCountingErrors = onRequestError(() => this.metrics?.requestErrors.inc());
    this.log.info({ port: (this.metricsServer.address() as { port: number }).port }, 'serving metrics at /metrics');
  }

  /** The heartbeat, then the claims of running tasks renewed (and stopped where no longer ours). */
  private beat(): Promise<void> {
    return untraced(async () => {
      const idle = Boolean(this.push?.up) && this.running.size === 0;
      await this.upkeep.beat({ idle, heardRecently: Date.now() - this.claims.lastOnPoll < this.slowPollMs() });
      await checkClaims(this.client, this.running, true, this.log).then(() => this.outage.ok(), (err: unknown) => this.outage.failed(err, 'could not renew the claims'));
    });
  }

  /**
   * The API answers again after an outage. Whatever arrived meanwhile is claimed and delivered now, and
   * push listens on a new connection: its WebSocket may have died without a word as the HTTP ones did
   * (realtime-js finds out only at its next heartbeat, up to a minute later), while the daemon, trusting
   * it, polls only as a safety net.
   */
  private recovered(): void {
    this.bell.ring('work');
    this.bell.ring('results');
    // A fleet whose API came back at once hears it on the same poll second: each listens again at a
    // moment of its own, so that their joins do not all land in the same second.
    setTimeout(() => { if (!this.push?.refused) this.relisten(); }, Math.random() * RECOVERY_SPREAD_MS).unref();
  }

  /**
   * Leaves push's channels and joins them again on a new connection: after an outage, or when push
   * has stayed down for pushStuckMs while the API answers (a join lost in a reconnect is not retried
   * by realtime-js once its channel is closed).
   */
  private relisten(): void {
    if (!this.push || this.stopping) return;
    const old = this.push;
    this.push = undefined;
    void old.stop().then(async () => {
      if (this.stopping) return;
      this.listen();
      // stop() may have run meanwhile, before this listener existed.
      if (this.stopping) await this.push?.stop();
    });
  }

  /** Joins its topics (its own, its capabilities', open work's); what arrives only rings the bell. */
  private listen(): void {
    this.push = listenForWork(this.client, agentTopics({ id: this.id, capabilities: this.profile.capabilities }), this.bell, this.log, {
      began: (incarnation, startedAt) => this.upkeep.heardIncarnation(incarnation, startedAt),
      news: (tasks) => this.runner.heard(tasks.map((t) => t.id)),
      meanwhile: `polling on its poll schedule (${this.poll}) instead`,
      channels: this.options.channels, token: this.options.token,
    });
  }


  /**
   * Self-fencing. The database keeps a claim while its holder is heard (claim_expires_at: the lease,
   * or two of its wake-ups, after the last call that went through). A daemon cut off from the API
   * cannot renew, and cannot know whether the sweep has handed its tasks to another holder; so, a
   * margin before that can happen, it stops the executors it could not vouch for, and hands their
   * claims back once the API answers (TaskRunner): another holder gets the task only after the lapse.
   * How long each claim holds is the database's word (check_claims' hold_seconds, a duration, kept on
   * this process's clock), renewed with every beat; a task waiting for an answer does not lapse.
   */
  private fence(): void {
    for (const run of this.running.values()) {
      const { hold } = run;
      if (run.reported || run.controller.signal.aborted || hold.until === undefined) continue;
      const { until, ms } = hold;
      if (until - Date.now() > Math.max(2000, ms * 0.25)) continue;
      const silentMs = Date.now() - (until - ms);
      this.log.warn({ taskId: run.task.id, silentMs, holdMs: ms }, 'could not confirm the claim before it could lapse; stopping its executor');
      run.controller.abort(new ClaimUnconfirmedError(`the claim went unconfirmed for ${Math.round(silentMs / 1000)} s, close to the ${Math.round(ms / 1000)} s the database held it for: another holder may take the task`));
    }
  }

  /**
   * Runs `wake` at this daemon's offset into `schedule`'s gap (its jitter times the gap, at most
   * SPREAD_MAX_MS); nothing once it is stopping.
   */
  private offset(schedule: string, wake: () => void): void {
    const gapMs = Math.min(SPREAD_MAX_MS, (schedule === this.poll ? this.periods.poll : this.periods.heartbeat) * 1000);
    setTimeout(() => { if (!this.stopping) wake(); }, this.jitter * gapMs).unref();
  }

  /** A beat on the schedule, unless the last one is still under way (the API slow or away): it skips. */
  private beatAlone(): void {
    if (this.beating) return void this.log.debug('the last beat is still under way: skipping this one');
    this.beating = this.beat()
      .catch((err: unknown) => this.outage.failed(err, 'heartbeat failed'))
      .finally(() => { this.beating = undefined; });
  }

  /**
   * The start's first calls, again after a spaced, growing pause (spacedPollMs) while the API answers
   * late or says its database is away: a fleet started at once (a deploy, every machine back from a
   * blip) meets a busy API, and a daemon that gave up there would be restarted by its supervisor into
   * the same crowd. Said once. An API never reached (refused, no such host) or a refusal (a revoked
   * token) still ends the start at once, with what to fix.
   */
  private async throughSlowStart(start: () => Promise<void>): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        return await start();
      } catch (err) {
        if (this.stopping || !(isLate(err) || err instanceof TransientError)) throw err;
        if (tries === 0) this.log.warn({ err }, 'the API is slow or its database away as this daemon starts (a fleet starting at once?); trying again, spaced out');
        const pause = spacedPollMs(tries);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pause);
          void this.stopped.then(() => { clearTimeout(timer); resolve(); });
        });
        if (this.stopping) return;
      }
    }
  }

  /**
   * A poll found work (`found`: the polls keep their rhythm again), or found nothing while push was
   * down, or the API was too slow to answer it: the next poll waits spacedPollMs.
   */
  private spacePolls(found: boolean): void {
    this.claims.idlePolls = found ? 0 : this.claims.idlePolls + 1;
    this.claims.idleUntil = found ? 0 : Date.now() + spacedPollMs(this.claims.idlePolls);
  }

  private slowPollMs(): number {
    return (this.options.slowPollSeconds ?? agentDefaults.slowPollSeconds) * 1000;
  }
}

/**
 * A claim's hold until its first check: the lease the database gave it, from now (its claim_lease,
 * set by every claim; else what it granted between the claim and the lease's end). The database may
 * hold it longer (two of the agent's wake-ups); the first check says so.
 */
function leaseHold(task: Task): ClaimHold {
  const granted = task.claimed_at && task.lease_expires_at ? Date.parse(task.lease_expires_at) - Date.parse(task.claimed_at) : undefined;
  const ms = (intervalSeconds(task.claim_lease) ?? 0) * 1000 || (granted !== undefined && granted > 0 ? granted : 0);
  return { until: Date.now() + ms, ms };
}

/** node-cron's logger, writing through the daemon's pino logger: its warnings are routine, at debug. */
function cronLogger(log: Logger): Parameters<typeof cron.setLogger>[0] {
  const cronLog = log.child({ scheduler: 'node-cron' });
  return {
    info: (message) => cronLog.debug(message),
    warn: (message) => cronLog.debug(message),
    error: (message, err) => cronLog.error({ err: err ?? message }, typeof message === 'string' ? message : 'scheduled call failed'),
    debug: (message) => cronLog.debug(String(message)),
  };
}
