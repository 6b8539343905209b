/**
 * What keeps the open pages live: the server listens through Supabase Realtime, as the daemon does (an
 * agent on its own topics; the operator on every agent's topic, every capability's and open work's), and
 * pushes each change to the pages as a server-sent event. A cheap look every second catches what no
 * topic carries to this identity (an agent's own hand-off to another, a new agent), and while push is
 * down the counts too.
 */
import type http from 'node:http';
import type { Logger } from '../logger.js';
import { agentTopics, PushListener, type PushedTask } from '../agent/push.js';
import type { BoardData } from './data.js';

/**
 * How many channels the operator's board joins at most (one per agent and capability, and open work).
 * More than the 100 channels a connection may hold on a hosted plan: a hosted project's operator board
 * with more agents than that has its joins refused and falls back to its look every second (left to do:
 * a board that listens within the plan's channels).
 */
export const maxTopics = 500;

export class BoardFeed {
  private readonly pages = new Set<http.ServerResponse>();
  private push: PushListener | undefined;
  private timer: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private seen = '';
  private listeningSince = 0;
  /** What the pages were last told of push (undefined: nothing yet). */
  private said: boolean | undefined;
  private stopped = false;

  constructor(private readonly data: BoardData, private readonly log: Logger, private readonly pollMs: number) {}

  get pushUp(): boolean {
    return this.push?.up ?? false;
  }

  async start(): Promise<void> {
    await this.look();
    this.keepAlive = setInterval(() => this.emit(':', ''), 25_000);
    this.keepAlive.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.keepAlive);
    for (const page of this.pages) page.end();
    this.pages.clear();
    await this.push?.stop();
  }

  /** An open page's event stream. */
  stream(req: http.IncomingMessage, res: http.ServerResponse, headers: Record<string, string>): void {
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    if (this.said !== undefined) res.write(`event: push\ndata: ${JSON.stringify({ up: this.said })}\n\n`);
    this.pages.add(res);
    req.on('close', () => this.pages.delete(res));
  }

  private emit(event: string, data: unknown): void {
    const frame = event === ':' ? ': keep-alive\n\n' : `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const page of this.pages) page.write(frame);
  }

  /** Tells the pages whether push is up, when that changed. */
  private tell(up: boolean): void {
    if (up === this.said) return;
    this.said = up;
    this.emit('push', { up });
  }

  private changed(tasks: PushedTask[]): void {
    this.emit('change', { tasks: tasks.map((t) => ({ id: t.id, status: t.status })) });
  }

  /** Listens on the topics this identity should hear, and on a new agent's too once it appears. */
  private async listen(): Promise<void> {
    const who = this.data.identity;
    let topics: string[];
    if (who.kind === 'agent') {
      topics = agentTopics(await who.client.agent(who.client.agentId));
    } else {
      const agents = await who.admin.listAgents();
      const capabilities = new Set(agents.flatMap((a) => a.capabilities));
      // Every change reaches its sender's topic; past maxTopics channels the slow look catches the rest.
      topics = ['tasks:open', ...[...capabilities].map((c) => `capability:${c}`), ...agents.map((a) => `agent:${a.id}`)].slice(0, maxTopics);
    }
    if (this.push) {
      const before = this.push.up;
      this.push.listenAlso(topics);
      if (before && !this.push.up) this.listeningSince = Date.now();
      return;
    }
    const db = who.kind === 'agent' ? who.client.db : who.admin.db;
    this.push = new PushListener(db, [...topics], {
      work: (tasks) => this.changed(tasks),
      news: (tasks) => this.changed(tasks),
      up: () => this.tell(true),
    }, this.log);
    this.push.start();
    this.listeningSince = Date.now();
  }

  /**
   * The look, every pollMs: the newest task and agent (index reads, cheap on any project) say whether
   * something was handed off or registered that push did not carry; while push is down, the counts too.
   */
  private async look(): Promise<void> {
    if (this.stopped) return;
    try {
      const seen = JSON.stringify(await Promise.all([this.newest(), this.pushUp ? null : this.data.overview()]));
      if (seen !== this.seen) {
        if (this.seen) this.emit('change', { tasks: [] });
        await this.listen();
      }
      this.seen = seen;
      // Joining takes a moment: only a listener that has had 10 s to join is reported down.
      if (this.pushUp) this.tell(true);
      else if (Date.now() - this.listeningSince > 10_000) this.tell(false);
    } catch (err) {
      this.log.warn({ err }, 'the board could not look for changes; trying again');
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.look(), this.pollMs);
      this.timer.unref();
    }
  }

  private async newest(): Promise<unknown> {
    const who = this.data.identity;
    const db = who.kind === 'agent' ? who.client.db : who.admin.db;
    let tasks = db.from('task_handoffs').select('id').order('created_at', { ascending: false }).limit(1);
    // An agent's own hand-offs are what no topic of its own carries; its index finds the newest at once.
    if (who.kind === 'agent') tasks = tasks.eq('from_agent', who.client.agentId);
    const [task, agent] = await Promise.all([tasks, db.from('agents').select('id').order('created_at', { ascending: false }).limit(1)]);
    if (task.error ?? agent.error) throw task.error ?? agent.error;
    return [task.data, agent.data];
  }
}
