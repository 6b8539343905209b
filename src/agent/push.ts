/**
 * Wake-ups through Supabase Realtime: an agent listens on private channels for its own topic, its
 * capabilities' topics and open work (see supabase/migrations/*_history_and_push.sql). A message only says that
 * there is work or news; the daemon then claims or reads through the RPCs as always. realtime-js
 * rejoins channels and reconnects with backoff by itself; this tracks whether every channel is up, so
 * the daemon can poll fast while one is not.
 */
import type { RealtimeChannel } from '@supabase/supabase-js';
import type { Logger } from 'pino';
import type { BatonClient } from '../client/agent.js';
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
}

/** The topics an agent listens on: its own, open work's, and each of its capabilities'. */
export function agentTopics(agent: { id: string; capabilities: readonly string[] }): string[] {
  return [`agent:${agent.id}`, 'tasks:open', ...agent.capabilities.map((c) => `capability:${c}`)];
}

export class PushListener {
  private readonly channels: RealtimeChannel[] = [];
  private readonly joined = new Set<string>();
  private wasUp = false;
  /** Since when not every channel is joined (from the start, until they are). */
  private downSince: number | undefined = Date.now();
  private stopping = false;

  constructor(
    /** The connection to listen with: an agent's (its topics) or the operator's (any topic). */
    private readonly db: BatonDb,
    private readonly topics: string[],
    private readonly handlers: PushHandlers,
    private readonly log: Logger,
  ) {}

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
    const channel = this.db.channel(topic, { config: { private: true } })
      .on('broadcast', { event: 'work' }, ({ payload }) => this.handlers.work((payload as { tasks?: PushedTask[] }).tasks ?? []))
      .on('broadcast', { event: 'task' }, ({ payload }) => this.handlers.news((payload as { tasks?: PushedTask[] }).tasks ?? []))
      .on('broadcast', { event: 'incarnation' }, ({ payload }) => {
        const { incarnation, started_at: startedAt } = payload as { incarnation?: unknown; started_at?: string };
        if (typeof incarnation === 'string') this.handlers.began?.(incarnation, startedAt);
      });
    channel.subscribe((status, err) => {
      // Leaving on purpose is no outage to report.
      if (this.stopping) return;
      if (status === 'SUBSCRIBED') this.joined.add(topic);
      else this.joined.delete(topic);
      if (this.up && !this.wasUp) {
        this.log.info({ topics: this.topics }, 'push is up: listening for work');
        this.handlers.up();
      } else if (!this.up && this.wasUp) {
        this.log.warn({ topic, status, err: err?.message }, 'push is down: polling at the fast rhythm until it is back');
      } else if (status !== 'SUBSCRIBED' && status !== 'CLOSED') {
        this.log.warn({ topic, status, err: err?.message }, 'could not listen; polling instead');
      }
      this.wasUp = this.up;
      if (this.up) this.downSince = undefined;
      else this.downSince ??= Date.now();
    });
    this.channels.push(channel);
  }

  /**
   * Leaves its channels, and closes the connection once no listener on it has any left, so nothing
   * keeps the process alive (the A2A facade follows several tasks of one caller over one connection).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.channels.splice(0).map((c) => this.db.removeChannel(c)));
    this.joined.clear();
    if (this.db.realtime.getChannels().length === 0) this.db.realtime.disconnect();
  }
}

/**
 * Listens for the agent's work and news, and only rings the daemon's bell: work to claim (again when a
 * retry's backoff is due), results to deliver, and both when every channel is joined again. A process
 * beginning as the agent is told to `began`.
 */
export function listenForWork(client: BatonClient, topics: string[], bell: Bell, log: Logger,
  also: { began?: PushHandlers['began']; news?: PushHandlers['news'] } = {}): PushListener {
  const push = new PushListener(client.db, topics, {
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
  }, log);
  push.start();
  return push;
}
