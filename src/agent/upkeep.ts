/**
 * What keeps a daemon known and the fleet's work moving, apart from its own tasks: the incarnation it
 * runs as, heartbeats, its view of its peers, and its turn at the sweep; and the check that keeps the
 * claims of its running tasks current. (Delivering the sender's results and questions: results.ts.)
 */
import type { Logger } from 'pino';
import type { BatonClient } from '../client/agent.js';
import { intervalSeconds } from '../durations.js';
import { SupersededError } from '../errors.js';
import type { AgentPresence, Task } from '../schemas.js';
import { agentDefaults, type AgentOptions } from './options.js';
import type { OutageLog } from './outage.js';

/** A peer that wakes at least this often (seconds) is a daemon, and takes its turn at the sweep. */
const sweeperRhythmSeconds = 60;
/** Where pg_cron runs the sweep, how often a daemon looks whether it still does. */
const scheduledSweepCheckMs = 10 * 60_000;
/** The longest rhythm the database accepts (baton_private.tg_agents__heard_from). */
const maxEverySeconds = 7 * 86_400;

export class Upkeep {
  peers: AgentPresence[] = [];
  /** This process, as the database knows it (begin_incarnation); a later process of the agent supersedes it. */
  get incarnation(): string | undefined {
    return this.client.incarnation;
  }
  private beats = 0;
  private nextSweepAt = 0;
  /** Why a later process took over the agent, once one has. */
  private supersededBecause: string | undefined;

  constructor(
    private readonly client: BatonClient,
    private readonly agentId: string,
    private readonly log: Logger,
    private readonly outage: OutageLog,
    /** A later process took over the agent: this one steps aside (stops). */
    private readonly stepAside: () => void,
  ) {}

  /**
   * Writes the agent's own row: what it is, and how often it is sure to wake (its claims survive two
   * missed wake-ups). Its max_concurrent (set here or by an operator) is its capacity.
   */
  async register(options: AgentOptions, periods: { poll: number; heartbeat: number }): Promise<{ capacity: number; capabilities: string[]; everySeconds: number }> {
    const { displayName, capabilities, skillsOffered, maxConcurrent } = options;
    const pollIntervalSeconds = options.everySeconds ?? Math.min(periods.poll, periods.heartbeat, maxEverySeconds);
    const row = await this.client.updateProfile({ displayName, capabilities, skillsOffered, maxConcurrent, pollIntervalSeconds });
    return { capacity: row.max_concurrent, capabilities: row.capabilities, everySeconds: pollIntervalSeconds };
  }

  /**
   * This process starts as the agent: whatever claims an earlier process left (killed, crashed, its
   * machine gone) go back at once by the database's rule, instead of waiting for their leases while
   * this process beats under the same id. Returns when that work may be claimed again, if there is any.
   */
  async begin(): Promise<string | null> {
    const { incarnation, claimable_at: claimableAt, ...handedBack } = await this.client.beginIncarnation();
    // From now on every request names this process: it acts only on its own claims.
    this.client.incarnation = incarnation;
    if (Object.values(handedBack).some((n) => n > 0)) {
      this.log.warn({ handedBack }, 'handed back the claims an earlier process of this agent left');
    }
    return claimableAt;
  }

  /** A daemon's first turn at the sweep falls anywhere in its period: daemons started together spread out. */
  spreadFirstSweep(): void {
    this.nextSweepAt = Date.now() + this.sweepPeriodMs() * Math.random();
  }

  /**
   * A heartbeat, and now and then a look at the peers. An idle agent whose push is up is heard through
   * its safety-net claims (every call that can write records a beat) and looks at its peers every tenth
   * beat: a hundred idle agents cost a few requests a second in all.
   */
  async beat({ idle, heardRecently }: { idle: boolean; heardRecently: boolean }): Promise<void> {
    try {
      if (!idle || !heardRecently) await this.client.heartbeat(undefined, { incarnation: this.incarnation });
      this.beats += 1;
      if (idle && this.beats % 10 !== 1) return;
      const everyone = await this.client.discover();
      // An idle process sends no heartbeat to be refused; its own row says who runs the agent now.
      const me = everyone.find((p) => p.id === this.agentId);
      if (me?.incarnation) this.heardIncarnation(me.incarnation, me.incarnation_started_at);
      this.peers = everyone.filter((p) => p.id !== this.agentId);
    } catch (err) {
      if (err instanceof SupersededError) return this.superseded(err.message);
      this.outage.failed(err, 'heartbeat failed');
    }
  }

  /**
   * The sweep is the same for everyone, and the database runs one at a time, so the fleet shares it:
   * each of n daemons sweeps about every n × sweepSeconds (jittered), and together they sweep about
   * every sweepSeconds whatever their number. Peers that wake less often (agents on a cron) are not
   * counted; where pg_cron runs the sweep, daemons leave it to pg_cron and look again now and then.
   */
  async sweepIfDue(): Promise<void> {
    if (Date.now() < this.nextSweepAt) return;
    this.nextSweepAt = Date.now() + this.sweepPeriodMs();
    const { scheduled, ...report } = await this.client.sweep();
    if (scheduled) this.nextSweepAt = Date.now() + scheduledSweepCheckMs;
    if (Object.values(report).some((n) => n > 0)) this.log.info({ sweep: report }, 'swept');
  }

  /** The agent's current process, as heard (its row, or its start pushed on the agent's topic). */
  heardIncarnation(incarnation: string, since?: string | null): void {
    if (this.incarnation && incarnation !== this.incarnation) {
      this.superseded(`agent ${this.agentId} began again${since ? ` at ${since}` : ''} as another process`);
    }
  }

  /** Marks the agent stopped, unless a later process took it over (its row is that process's now). */
  async markInactive(): Promise<void> {
    if (this.supersededBecause) return;
    await this.client.heartbeat(undefined, { active: false, incarnation: this.incarnation })
      .catch((err: unknown) => this.log.warn({ err }, 'could not mark inactive'));
  }

  /** A later process took over the agent (a refusal said so, or its start was heard): this one steps aside. */
  superseded(reason: string): void {
    if (this.supersededBecause) return;
    this.supersededBecause = reason;
    this.log.error({ reason }, 'a later process took over this agent; stopping (run one daemon per agent)');
    this.stepAside();
  }

  private sweepPeriodMs(): number {
    const sweepers = 1 + this.peers.filter((p) => (intervalSeconds(p.poll_interval) ?? Infinity) <= sweeperRhythmSeconds).length;
    return agentDefaults.sweepSeconds * 1000 * sweepers * (0.5 + Math.random());
  }
}

/** Until when (this process's clock) a claim holds, and for how long it was held when last said; no `until`: it does not lapse. */
export type ClaimHold = { until: number; ms: number } | { until?: undefined; ms?: undefined };

/**
 * Stops work whose claim is no longer the agent's (cancelled, re-queued, reassigned); renews the rest,
 * and keeps how long the database says each holds, from when the check was sent.
 */
export async function checkClaims(client: BatonClient, running: Map<string, { task: Task; controller: AbortController; hold: ClaimHold }>, renew: boolean, log: Logger): Promise<void> {
  const claims = [...running.values()].map(({ task }) => ({ taskId: task.id, claimToken: task.claim_token! }));
  const sentAt = Date.now();
  for (const check of await client.checkClaims(claims, { renew })) {
    const run = running.get(check.task_id);
    if (run && check.current) {
      run.hold = check.hold_seconds === null ? {} : { until: sentAt + check.hold_seconds * 1000, ms: check.hold_seconds * 1000 };
    }
    // Said once: an executor that does not heed its signal at once is still in `running` on the next check.
    if (run && !check.current && !run.controller.signal.aborted) {
      log.info({ taskId: check.task_id, status: check.status }, 'claim no longer current; stopping its executor');
      run.controller.abort(new Error(`the task is now ${check.status ?? 'gone'}`));
    }
  }
}
