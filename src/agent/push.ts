/**
 * Wake-ups through Supabase Realtime: an agent listens on private channels for its own topic, its
 * capabilities' topics and open work (see supabase/migrations/*_history_and_push.sql). A message only says that
 * there is work or news; the daemon then claims or reads through the RPCs as always. realtime-js
 * rejoins channels and reconnects with backoff by itself; this tracks whether every channel is up, so
 * the daemon can poll fast while one is not.
 */
import type { Logger } from 'pino';
import type { BatonClient } from '../client/agent.js';
import { Channels } from '../client/channels.js';
import type { BatonDb } from '../client/connection.js';
import { finalStatuses, type TaskStatus } from '../schemas.js';
import type { Bell } from './bell.js';

/** What a message says of a task: never more than its id, status and when it may be claimed. */
export interface PushedTask { id: string; status: string; not_before?: string | null }

export interface PushHandlers {
  /** Work became claimable on one of the topics (a retry only once its not_before has passed). */
  work(tasks: PushedTask[]): void;
  /** A task this agent sent or holds changed. */
  news(tasks: PushedTask[]): void;
  /** Every channel joined (again): catch up on anything missed while down. */
  up(): void;
  /** A process began as the agent (begin_incarnation), heard on the agent's own topic. */
  began?(incarnation: string, startedAt?: string): void;
  /** Realtime refused a join or the connection for a plan's quota (`reason`, hosted's words). */
  refused?(reason: string): void;
}

/**
 * While Realtime refuses push for a quota, a listener waits this long before it joins again: from
 * PUSH_RETRY_FIRST_MS, doubling per refusal up to PUSH_RETRY_MAX_MS, each wait drawn from half to all
 * of it, so that a fleet refused at once (a deploy, a restart) comes back spread out, never in step.
 */
export const PUSH_RETRY_FIRST_MS = 15_000;
export const PUSH_RETRY_MAX_MS = 600_000;
export const pushRetryMs = (tries: number): number =>
  Math.min(PUSH_RETRY_MAX_MS, PUSH_RETRY_FIRST_MS * 2 ** Math.max(0, tries - 1)) * (0.5 + 0.5 * Math.random());

/**
 * How hosted Realtime words a join refused for a plan's quota (supabase/realtime's realtime_channel.ex:
 * connections, joins per second, channels per connection; a project whose Realtime was disabled).
 */
const quotaRefusal = /ConnectionRateLimitReached|ClientJoinRateLimitReached|ChannelRateLimitReached|RealtimeDisabledForTenant|Too many (connected users|joins|channels)/;

/** Whether `reason` is hosted Realtime refusing a join for a quota. */
export function isQuotaRefusal(reason: string | undefined): boolean {
  return reason !== undefined && quotaRefusal.test(reason);
}

/** The topics an agent listens on: its own, open work's, and each of its capabilities'. */
export function agentTopics(agent: { id: string; capabilities: readonly string[] }): string[] {
  return [`agent:${agent.id}`, 'tasks:open', ...agent.capabilities.map((c) => `capability:${c}`)];
}

/**
 * Where a listener joins: a client's own connection (Channels.of(db): more like it past 100 channels),
 * or channels shared by the listeners of one process, each joined with `token`, an agent's token.
 */
export type PushSource = BatonDb | { channels: Channels; token?: string };

/** A shared channel's line names how many listeners of the process it speaks for. */
const listeners = (n: number) => (n > 1 ? { listeners: n } : {});

export class PushListener {
  private readonly channels: Channels;
  private readonly token: string | undefined;
  /** How to leave each channel joined in this round. */
  private readonly leaves: Array<() => Promise<void>> = [];
  private readonly joined = new Set<string>();
  private wasUp = false;
  /** Since when not every channel is joined (from the start, until they are). */
  private downSince: number | undefined = Date.now();
  private stopping = false;
  /** Each round of joins; a channel of an earlier round (left after a refusal) says nothing more. */
  private round = 0;
  /** Refusals for a quota since push was last up, and the wait before joining again. */
  private refusals = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    /** Where to listen: an agent's connection (its topics), the operator's (any topic), or a process's shared channels. */
    source: PushSource,
    private readonly topics: string[],
    private readonly handlers: PushHandlers,
    private readonly log: Logger,
    /** What the caller does meanwhile while push is refused, as its log line says it. */
    private readonly meanwhile = 'polling instead',
  ) {
    const given = 'channels' in source && source.channels instanceof Channels ? source as { channels: Channels; token?: string } : undefined;
    this.channels = given?.channels ?? Channels.of(source as BatonDb);
    this.token = given?.token;
  }

  /** The topics it listens on. */
  get listening(): readonly string[] {
    return this.topics;
  }

  /** Whether it is waiting to join again after Realtime refused it for a quota. */
  get refused(): boolean {
    return this.retry !== undefined;
  }

  /** Whether every channel is joined now. */
  get up(): boolean {
    return this.joined.size === this.topics.length;
  }

  /** How long not every channel has been joined; 0 while they are. */
  get downForMs(): number {
    return this.downSince === undefined ? 0 : Date.now() - this.downSince;
  }

  start(): void {
    for (const topic of this.topics) this.join(topic);
  }

  /** Listens on more topics too (a board that sees a new agent); the ones already joined stay. */
  listenAlso(topics: string[]): void {
    for (const topic of topics) {
      if (this.topics.includes(topic)) continue;
      this.topics.push(topic);
      this.join(topic);
    }
    // Not up until the new ones are joined too; then `up` is called again.
    this.wasUp = this.up;
  }

  private join(topic: string): void {
    const round = this.round;
    const events: Record<string, (payload: unknown) => void> = {
      work: (payload) => this.handlers.work((payload as { tasks?: PushedTask[] }).tasks ?? []),
      task: (payload) => this.handlers.news((payload as { tasks?: PushedTask[] }).tasks ?? []),
      incarnation: (payload) => {
        const { incarnation, started_at: startedAt } = payload as { incarnation?: unknown; started_at?: string };
        if (typeof incarnation === 'string') this.handlers.began?.(incarnation, startedAt);
      },
    };
    this.leaves.push(this.channels.join(topic, {
      broadcast: (event, payload) => { if (round === this.round && !this.stopping) events[event]?.(payload ?? {}); },
      status: (status, err, connection, speaksFor) => this.heard(topic, round, status, err, connection, speaksFor),
    }, this.token));
  }

  private heard(topic: string, round: number, status: string, err: Error | undefined, connection: string | undefined, speaksFor: number): void {
    // Leaving on purpose is no outage to report.
    if (this.stopping || round !== this.round) return;
    if (status === 'CHANNEL_ERROR') {
      // Refused at the join (hosted's reason in the reply), or the connection refused (HTTP 429).
      const reason = isQuotaRefusal(err?.message) ? err!.message : connection && /^HTTP 429/.test(connection) ? `${connection} (the plan's connections or joins per second)` : undefined;
      if (reason) return void this.refuse(reason);
    }
    if (status === 'SUBSCRIBED') this.joined.add(topic);
    else this.joined.delete(topic);
    if (this.up && !this.wasUp) {
      if (this.refusals) this.log.info({ topics: this.topics, refusals: this.refusals }, 'push is back after Realtime refused it: listening again');
      else this.log.info({ topics: this.topics }, 'push is up: listening for work');
      this.refusals = 0;
      this.handlers.up();
    } else if (speaksFor === 0) {
      // What became of a shared channel is said once, by its first listener, for all of them.
    } else if (!this.up && this.wasUp) {
      this.log.warn({ topic, status, err: err?.message, ...listeners(speaksFor) }, 'push is down: polling until it is back (on the poll schedule, spacing out to 30 s while polls find nothing)');
    } else if (status !== 'SUBSCRIBED' && status !== 'CLOSED') {
      this.log.warn({ topic, status, err: err?.message, ...listeners(speaksFor) }, 'could not listen; polling instead');
    }
    this.wasUp = this.up;
    if (this.up) this.downSince = undefined;
    else this.downSince ??= Date.now();
  }

  /**
   * Refused for a quota: leaves every channel, so that realtime-js does not rejoin on its own every few
   * seconds, and lets the connection go once no listener holds a channel on it, so that the plan counts
   * none; says so once, and joins again after pushRetryMs. Hosted may disable Realtime for a project
   * whose clients loop.
   */
  private refuse(reason: string): void {
    if (this.stopping || this.retry) return;
    this.round += 1;
    this.refusals += 1;
    this.joined.clear();
    this.wasUp = false;
    this.downSince ??= Date.now();
    const waitMs = pushRetryMs(this.refusals);
    const line = { reason, refusals: this.refusals, retryInSeconds: Math.round(waitMs / 1000) };
    if (this.refusals === 1) this.log.warn(line, `push refused by Realtime (${reason}): ${this.meanwhile}, and listening again later (the wait doubles while it is refused, up to ${PUSH_RETRY_MAX_MS / 60_000} min)`);
    else this.log.debug(line, 'push refused again');
    const left = this.leaves.splice(0);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (!this.stopping) this.start();
    }, waitMs);
    this.retry.unref();
    void Promise.all(left.map((leave) => leave()));
    this.handlers.refused?.(reason);
  }

  /**
   * Leaves its channels; a connection is closed once no listener has any left on it, so nothing keeps
   * the process alive (the A2A facade follows several tasks of one caller over one connection).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retry);
    this.retry = undefined;
    await Promise.all(this.leaves.splice(0).map((leave) => leave()));
    this.joined.clear();
  }
}

/**
 * Listens for the agent's work and news, and only rings the daemon's bell: work to claim (again when a
 * retry's backoff is due), results to deliver, and both when every channel is joined again. A process
 * beginning as the agent is told to `began`.
 */
export function listenForWork(client: BatonClient, topics: string[], bell: Bell, log: Logger,
  also: { began?: PushHandlers['began']; news?: PushHandlers['news']; meanwhile?: string; channels?: Channels; token?: string } = {}): PushListener {
  const push = new PushListener(also.channels ? { channels: also.channels, token: also.token } : client.db, topics, {
    work: (tasks) => {
      bell.ring('work');
      const due = Math.min(...tasks.map((t) => (t.not_before ? Date.parse(t.not_before) : Infinity)));
      if (Number.isFinite(due) && due > Date.now()) bell.ringAt('work', due + 50);
    },
    news: (tasks) => {
      also.news?.(tasks);
      // A final status brings a result, input_required a question.
      if (tasks.some((t) => t.status === 'input_required' || finalStatuses.includes(t.status as TaskStatus))) bell.ring('results');
    },
    up: () => { bell.ring('work'); bell.ring('results'); },
    began: also.began,
  }, log, also.meanwhile);
  push.start();
  return push;
}
