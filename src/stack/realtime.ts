/**
 * Supabase Realtime's broadcast, for the embedded stack: the Phoenix channel protocol that
 * @supabase/realtime-js speaks (JSON frames), fed by the outbox that the bootstrap's realtime.send()
 * writes to (see migrations/01_realtime_bootstrap.sql). A private channel is joined only if the realtime.messages policies let the joining role read
 * a message on its topic, evaluated in the database as that role with its claims (as hosted Realtime
 * does), after the same token check as every REST call. Postgres changes and client broadcasts are not
 * served: Baton's agents only listen. A plan's quotas (quotas.ts) are kept as hosted Realtime keeps them,
 * with its answers: a connection refused with HTTP 429, a join refused with hosted's reason (and the
 * socket closed after too many joins per second), broadcasts dropped while messages per second are over.
 */
import type http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Duplex } from 'node:stream';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { refuseTokenHeader } from '../tokens.js';
import pg from 'pg';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import { parseRealtimePlan, RateCounter, type RealtimeQuotas } from './quotas.js';

export const REALTIME_PATH = '/realtime/v1/websocket';

/** The channel realtime.send() raises a NOTIFY on while the doorbell is set. */
const CHANNEL = 'realtime_broadcast';
/**
 * While messages come, the outbox is drained this often: each drain takes what came meanwhile. Every
 * 5 ms, the drains cost 0.06–0.09 ms of Postgres CPU per single hand-off more (docs/benchmarks.md); a
 * daemon that is idle while others keep the outbox busy hears of its work at most this much later.
 */
const DRAIN_INTERVAL_MS = 20;
/** Most messages one drain takes. */
const DRAIN_BATCH = 5000;
/**
 * Each drain reads every page the outbox has, and the pages of drained messages stay until a vacuum;
 * autovacuum comes at most once a minute: at a thousand hand-offs a second, the drains would read some
 * 700 mostly empty pages every 20 ms. So the drainer vacuums the outbox itself (unlogged, without an
 * index: about a millisecond). Every this many messages drained, so that new messages reuse the pages
 * of drained ones (a vacuum while messages come gives back no page: the newest are at the table's end)…
 */
const VACUUM_EVERY = 10_000;
/**
 * …and when a drain finds the outbox empty, the first to since messages were drained, while it holds
 * more pages than this, to give them back. That vacuum may give back fewer, behind a message still being
 * sent; the empty drain after that message tries again. No message, no vacuum: the drains while the
 * doorbell settles, or behind a long transaction whose snapshot keeps the drained rows, do not repeat it.
 */
const EMPTY_OUTBOX_PAGES = 8;
/** One drain: the oldest messages, up to $1 of them, taken from the outbox (see RealtimeServer.drain). */
export const DRAIN_SQL = `with taken as (
  delete from realtime.outbox
  where id <= (select max(b.id) from (select o.id from realtime.outbox o order by o.id limit $1) b)
  returning id, message)
select message from taken order by id`;
/** The drainer's connection, as pg_stat_activity shows it. */
export const DRAINER_NAME = 'baton realtime drainer';
/** While the doorbell is set, the outbox is looked at this often all the same. */
const IDLE_CHECK_MS = 10_000;
/** Longest pause while waiting for the transactions open when the doorbell was set to end. */
const SETTLE_PAUSE_MS = 100;
const ROLES = new Set(['anon', 'authenticated', 'service_role']);

export interface RealtimeOptions {
  databaseUrl: string;
  /** The public signing keys (ES256) tokens may be signed with. */
  jwks: JWK[];
  /** The legacy JWT secret, if HS256 tokens are accepted. */
  legacySecret?: string;
  log: Logger;
  /** The plan's quotas (default: Free's). */
  quotas?: RealtimeQuotas;
}

export interface RealtimeHandle {
  /**
   * Takes over an HTTP upgrade to REALTIME_PATH, made with an API key the gateway knows: an opaque one
   * (the role it stands for) or a legacy one (itself a token).
   */
  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, apiKey: { role: 'anon' | 'service_role' } | { legacyKey: string }): void;
  /** What it carries against its quotas, in Prometheus's text format. */
  metrics(): string;
  stop(): Promise<void>;
}

/** Hosted Realtime's reasons, word for word (supabase/realtime, realtime_channel.ex and user_socket.ex). */
export const quotaReasons = Object.freeze({
  connections: 'ConnectionRateLimitReached: Too many connected users',
  joins: 'ClientJoinRateLimitReached: Too many joins per second',
  channels: 'ChannelRateLimitReached: Too many channels',
});

/** A join its client no longer waits for: left, sent again or its socket gone. */
class Unwanted extends Error {}

type Frame = [joinRef: string | null, ref: string | null, topic: string, event: string, payload: Record<string, unknown>];
interface Joined { socket: WebSocket; joinRef: string; private: boolean }

export async function startRealtime(options: RealtimeOptions): Promise<RealtimeHandle> {
  const quotas = options.quotas ?? parseRealtimePlan(undefined);
  const server = new RealtimeServer({ ...options, quotas });
  await server.listen();
  options.log.info({ quotas }, 'realtime: keeping the plan\'s quotas, as hosted Realtime does');
  // Its methods may be passed around on their own (the stack keeps stop() with the others).
  return { upgrade: (req, socket, head, apiKey) => server.upgrade(req, socket, head, apiKey), metrics: () => server.metrics(), stop: () => server.stop() };
}

class RealtimeServer {
  private readonly log: Logger;
  private readonly keys: ReturnType<typeof createLocalJWKSet>;
  private readonly accepted: { kids: Set<string | undefined>; legacySecret: boolean };
  private readonly secret: Uint8Array | undefined;
  private readonly pool: pg.Pool;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  /** Who listens on each topic (as realtime-js names it, "realtime:<topic>"). */
  private readonly listeners = new Map<string, Set<Joined>>();
  private listener: pg.Client | undefined;
  private stopping = false;
  /** Messages drained since the outbox was last vacuumed, and since a drain last found it empty. */
  private drainedSinceVacuum = 0;
  private drainedSinceEmpty = 0;
  private readonly quotas: RealtimeQuotas;
  private readonly joinRate: RateCounter;
  private readonly messageRate: RateCounter;
  /** The connections that joined a channel: hosted's "concurrent users". */
  private readonly counted = new Set<WebSocket>();
  /** The topics each connection holds. */
  private readonly held = new Map<WebSocket, Set<string>>();
  /** Per socket, each topic's join being judged, by its join ref. */
  private readonly joining = new Map<WebSocket, Map<string, string | null>>();
  private readonly counts = {
    joins: 0, messagesSent: 0, messagesDelivered: 0,
    joinsRefused: { connections: 0, joins: 0, channels: 0 },
    connectionsRefused: { connections: 0, joins: 0 },
    messagesDropped: { rate: 0, payload: 0 },
  };

  constructor(private readonly options: RealtimeOptions) {
    this.log = options.log;
    this.keys = createLocalJWKSet({ keys: options.jwks });
    this.accepted = { kids: new Set(options.jwks.map((k) => k.kid)), legacySecret: Boolean(options.legacySecret) };
    this.secret = options.legacySecret ? new TextEncoder().encode(options.legacySecret) : undefined;
    this.pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4 });
    this.pool.on('error', (err) => this.log.warn({ err }, 'realtime: a database connection failed'));
    this.quotas = options.quotas!;
    this.joinRate = new RateCounter(this.quotas.joinsPerSecond);
    this.messageRate = new RateCounter(this.quotas.messagesPerSecond);
    this.wss.on('connection', (socket: WebSocket, apiKeyClaims: JWTPayload | undefined) => this.connected(socket, apiKeyClaims));
  }

  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, apiKey: { role: 'anon' | 'service_role' } | { legacyKey: string }): void {
    // As hosted checks a tenant's connections and joins before it takes a socket: HTTP 429.
    const over = this.counted.size >= this.quotas.connections ? 'connections' : this.joinRate.triggered ? 'joins' : undefined;
    if (over) {
      this.counts.connectionsRefused[over] += 1;
      const body = JSON.stringify({ error: over === 'connections' ? 'Too many connected users' : 'Too many joins per second' });
      socket.end(`HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    const accept = (keyClaims: JWTPayload) =>
      this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, keyClaims));
    if ('role' in apiKey) return accept({ role: apiKey.role });
    // A legacy API key is itself a token: its role stands for a join without one of its own.
    this.verify(apiKey.legacyKey).then(accept, () => socket.destroy());
  }

  metrics(): string {
    const c = this.counts;
    const channels = [...this.held.values()].reduce((n, topics) => n + topics.size, 0);
    const lines = [
      ['baton_realtime_connections', 'gauge', 'Connections that joined a channel (hosted\'s concurrent users).', [['', this.counted.size]]],
      ['baton_realtime_connections_limit', 'gauge', 'The plan\'s concurrent connections.', [['', this.quotas.connections]]],
      ['baton_realtime_channels', 'gauge', 'Channels joined, over every connection.', [['', channels]]],
      ['baton_realtime_joins_total', 'counter', 'Channel joins taken.', [['', c.joins]]],
      ['baton_realtime_joins_per_second', 'gauge', 'Joins per second, averaged over the last minute as hosted does.', [['', this.joinRate.average]]],
      ['baton_realtime_joins_refused_total', 'counter', 'Joins refused, by the quota that refused them.', Object.entries(c.joinsRefused).map(([q, n]) => [`{quota="${q}"}`, n])],
      ['baton_realtime_connections_refused_total', 'counter', 'Connections refused with HTTP 429, by quota.', Object.entries(c.connectionsRefused).map(([q, n]) => [`{quota="${q}"}`, n])],
      ['baton_realtime_messages_sent_total', 'counter', 'Broadcasts taken from the outbox and sent.', [['', c.messagesSent]]],
      ['baton_realtime_messages_delivered_total', 'counter', 'Broadcasts delivered, one per channel that got one.', [['', c.messagesDelivered]]],
      ['baton_realtime_messages_per_second', 'gauge', 'Messages per second (sent and delivered), averaged over the last minute as hosted does.', [['', this.messageRate.average]]],
      ['baton_realtime_messages_dropped_total', 'counter', 'Broadcasts dropped, by the quota that dropped them.', Object.entries(c.messagesDropped).map(([q, n]) => [`{quota="${q}"}`, n])],
    ] as Array<[string, string, string, Array<[string, number]>]>;
    return lines.map(([name, type, help, values]) => [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...values.map(([labels, v]) => `${name}${labels} ${Number.isFinite(v) ? v : '+Inf'}`)].join('\n')).join('\n') + '\n';
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.joinRate.stop();
    this.messageRate.stop();
    for (const socket of this.wss.clients) socket.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await this.listener?.end().catch(() => undefined);
    await this.pool.end();
  }

  /** The claims of a token this project signed, or an error saying why not. */
  private async verify(token: string): Promise<JWTPayload> {
    const refused = refuseTokenHeader(token, this.accepted);
    if (refused) throw new Error(refused);
    return decodeProtectedHeader(token).alg === 'ES256' || !this.secret
      ? (await jwtVerify(token, this.keys, { algorithms: ['ES256'] })).payload
      : (await jwtVerify(token, this.secret, { algorithms: ['HS256'] })).payload;
  }

  /**
   * Whether `claims` may read broadcasts on `topic`, by the realtime.messages policies: a probe message
   * written and read back as the joining role, rolled back. One round trip (a simple query of several
   * statements), as a pool of four serves every join: a join that waits on the gateway's event loop
   * between statements holds its connection the while, and a fleet joining under load times out.
   * `wanted` is asked once a connection is free: a join its client gave up on (it timed out and left)
   * is not judged at all.
   */
  private async mayJoin(claims: JWTPayload, topic: string, wanted: () => boolean): Promise<'allowed' | 'unwanted'> {
    const role = String(claims.role ?? 'anon');
    if (!ROLES.has(role)) throw new Error(`the role "${role}" cannot join channels`);
    const client = await this.pool.connect();
    try {
      if (!wanted()) return 'unwanted';
      const text = (value: string) => client.escapeLiteral(value);
      const results = await client.query([
        'begin',
        `select set_config('request.jwt.claims', ${text(JSON.stringify(claims))}, true), set_config('request.method', 'GET', true)`,
        // Revoked, expired or never-issued agent tokens are refused here as on every REST call.
        'select baton_private.check_request()',
        `with probe as (insert into realtime.messages (topic, extension, event, payload, private) values (${text(topic)}, 'broadcast', 'join', '{}', true) returning id)
         select set_config('baton.join_probe', id::text, true) from probe`,
        `set local role ${role}`,
        `select set_config('realtime.topic', ${text(topic)}, true)`,
        "select count(*)::int as n from realtime.messages where id = current_setting('baton.join_probe')::uuid",
        'rollback',
      ].join(';\n')) as unknown as pg.QueryResult[];
      const seen = results.at(-2)!.rows[0] as { n: number };
      if (seen.n !== 1) throw new Error(`not allowed to listen on "${topic}"`);
      return 'allowed';
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private connected(socket: WebSocket, apiKeyClaims: JWTPayload | undefined): void {
    let alive = true;
    socket.on('pong', () => { alive = true; });
    const ping = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, 30_000);
    socket.on('close', () => {
      clearInterval(ping);
      for (const topic of [...this.listeners.keys()]) this.leave(socket, topic);
      this.counted.delete(socket);
      this.held.delete(socket);
      this.joining.delete(socket);
    });
    socket.on('message', (data: RawData, isBinary: boolean) => this.received(socket, data, isBinary, apiKeyClaims));
  }

  private received(socket: WebSocket, data: RawData, isBinary: boolean, apiKeyClaims: JWTPayload | undefined): void {
    let frame: Frame;
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(String(data)) as Frame;
      if (!Array.isArray(frame) || frame.length !== 5) throw new Error('not a frame');
    } catch {
      return; // client broadcasts (binary) and anything else are not served
    }
    const [, , topic, event] = frame;
    if (topic === 'phoenix' && event === 'heartbeat') return reply(socket, frame, 'ok', {});
    if (event === 'phx_join') return void this.join(socket, frame, apiKeyClaims);
    if (event === 'phx_leave') {
      this.joining.get(socket)?.delete(topic);
      this.leave(socket, topic);
      return reply(socket, frame, 'ok', {});
    }
    if (event === 'access_token') return reply(socket, frame, 'ok', {});
    return reply(socket, frame, 'error', { reason: `${event} is not served by the embedded stack` });
  }

  private async join(socket: WebSocket, frame: Frame, apiKeyClaims: JWTPayload | undefined): Promise<void> {
    const [joinRef, , topic, , payload] = frame;
    const config = (payload.config ?? {}) as { private?: boolean; postgres_changes?: unknown[] };
    if (config.postgres_changes?.length) {
      return reply(socket, frame, 'error', { reason: 'postgres_changes are not served by the embedded stack; listen to broadcasts' });
    }
    // Hosted's order: its connections, its joins per second, the connection's channels.
    let topics = this.held.get(socket);
    if (!topics) this.held.set(socket, topics = new Set<string>());
    const refused = !this.counted.has(socket) && this.counted.size >= this.quotas.connections ? 'connections'
      : this.joinRate.triggered ? 'joins'
        : !topics.has(topic) && topics.size >= this.quotas.channelsPerConnection ? 'channels' : undefined;
    if (refused) {
      this.counts.joinsRefused[refused] += 1;
      reply(socket, frame, 'error', { reason: quotaReasons[refused] });
      // Too many joins: hosted tells the transport to disconnect.
      if (refused === 'joins') socket.close(1000, 'disconnect');
      return;
    }
    this.joinRate.add();
    this.counts.joins += 1;
    // The join being judged for this topic on this socket: a later join or a leave makes it stale.
    let joining = this.joining.get(socket);
    if (!joining) this.joining.set(socket, joining = new Map());
    joining.set(topic, joinRef);
    // Held from now, as hosted registers the channel before it checks the token: joins that arrive
    // together are counted against the connection's channels together.
    const wasHeld = topics.has(topic);
    topics.add(topic);
    const wasCounted = this.counted.has(socket);
    this.counted.add(socket);
    try {
      const token = typeof payload.access_token === 'string' ? payload.access_token : undefined;
      const claims = token ? await this.verify(token) : apiKeyClaims;
      if (!claims) throw new Error('no token: join with an agent\'s access token');
      const wanted = () => socket.readyState === socket.OPEN && this.joining.get(socket)?.get(topic) === joinRef;
      if (config.private && await this.mayJoin(claims, topic.replace(/^realtime:/, ''), wanted) === 'unwanted') throw new Unwanted();
      // Gone or left while its join was judged: nothing to hold for it, nor to count.
      if (!wanted()) throw new Unwanted();
      this.joining.get(socket)?.delete(topic);
      this.leave(socket, topic);
      if (!this.listeners.has(topic)) this.listeners.set(topic, new Set());
      this.listeners.get(topic)!.add({ socket, joinRef: joinRef ?? '', private: Boolean(config.private) });
      topics.add(topic);
      this.counted.add(socket);
      reply(socket, frame, 'ok', { postgres_changes: [] });
    } catch (err) {
      // A join its client has left or sent again is answered by nothing (the client waits for no reply),
      // and leaves what the join sent since holds.
      const again = this.joining.get(socket)?.has(topic) && this.joining.get(socket)!.get(topic) !== joinRef;
      if (!again) {
        this.joining.get(socket)?.delete(topic);
        if (!wasHeld) topics.delete(topic);
        if (!wasCounted && topics.size === 0) this.counted.delete(socket);
      }
      if (!(err instanceof Unwanted)) reply(socket, frame, 'error', { reason: (err as Error).message });
    }
  }

  private leave(socket: WebSocket, topic: string): void {
    this.held.get(socket)?.delete(topic);
    const set = this.listeners.get(topic);
    if (!set) return;
    for (const joined of set) if (joined.socket === socket) set.delete(joined);
    if (set.size === 0) this.listeners.delete(topic);
  }

  /** A message from realtime.send(), to every socket that joined its topic. */
  private deliver(text: string): void {
    let message: { topic: string; event: string; payload: unknown; private: boolean };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    const topic = `realtime:${message.topic}`;
    // As hosted's broadcast from the database: a payload over the plan's size, or any message while
    // messages per second are over the quota, is dropped; each one sent, and each delivery, counts.
    if (Buffer.byteLength(JSON.stringify(message.payload ?? null)) > this.quotas.payloadBytes) return void (this.counts.messagesDropped.payload += 1);
    if (this.messageRate.triggered) return void (this.counts.messagesDropped.rate += 1);
    this.messageRate.add();
    this.counts.messagesSent += 1;
    for (const joined of this.listeners.get(topic) ?? []) {
      if (joined.private !== Boolean(message.private)) continue;
      this.messageRate.add();
      this.counts.messagesDelivered += 1;
      send(joined.socket, [joined.joinRef, null, topic, 'broadcast', { type: 'broadcast', event: message.event, payload: message.payload }]);
    }
  }

  /**
   * Deliveries: one connection that drains the outbox. At start, a database that does not answer is an
   * error; once running, the connection is made again for as long as it takes (Postgres restarting, or
   * restarted by the stack after a crash).
   */
  async listen(attempt = 0, reconnecting = false): Promise<void> {
    if (this.stopping) return;
    const client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: DRAINER_NAME });
    const bell = new Bell();
    const lost = (err: Error) => {
      if (this.listener !== client) return;
      this.listener = undefined;
      void client.end().catch(() => undefined);
      if (this.stopping) return;
      this.log.warn({ err }, 'realtime: the connection that drains the outbox failed; reconnecting');
      setTimeout(() => void this.listen(1, true), 500).unref();
    };
    client.on('notification', () => bell.ring());
    client.on('error', lost);
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
      // What was sent while no connection drained is not delivered (below: every client catches up).
      await client.query('delete from realtime.outbox');
      await client.query('insert into realtime.doorbell (id, armed) values (true, false) on conflict (id) do update set armed = false');
      this.listener = client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (attempt > 20 && !reconnecting) throw err;
      await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));
      return this.listen(attempt + 1, reconnecting);
    }
    if (reconnecting) {
      // What was sent while no connection drained is lost: every client is let go, and as each joins
      // again it looks for work and results itself (a daemon claims and reads its results on rejoining).
      this.log.info({ clients: this.wss.clients.size }, 'realtime: draining again; clients reconnect to catch up');
      for (const socket of this.wss.clients) socket.terminate();
    }
    this.drainLoop(client, bell).catch(lost);
  }

  /**
   * Drains the outbox every few milliseconds while messages come. Once a drain finds it empty, the
   * doorbell is set, so that the next send wakes the loop with a NOTIFY, and the loop sleeps until then.
   */
  private async drainLoop(client: pg.Client, bell: Bell): Promise<void> {
    while (this.listener === client) {
      if (await this.drain(client) > 0) {
        await sleep(DRAIN_INTERVAL_MS, undefined, { ref: false });
        continue;
      }
      bell.reset();
      await client.query('update realtime.doorbell set armed = true');
      if (await this.quietSinceBell(client)) await bell.wait(IDLE_CHECK_MS);
      await client.query('update realtime.doorbell set armed = false');
    }
  }

  /**
   * Whether the outbox stayed empty after the doorbell was set. A send that looked at the doorbell just
   * before it was set raises no NOTIFY, and its message shows only when its transaction commits: so the
   * outbox is drained again until every transaction open when the doorbell was set has ended (a
   * sender's has an id by then, from its write to the outbox). False as soon as a drain delivers.
   */
  private async quietSinceBell(client: pg.Client): Promise<boolean> {
    const snapshot = (await client.query<{ snapshot: string }>('select pg_catalog.pg_current_snapshot()::text as snapshot')).rows[0]!.snapshot;
    for (let pause = 1; ; pause = Math.min(2 * pause, SETTLE_PAUSE_MS)) {
      const { open } = (await client.query<{ open: boolean }>(
        "select exists (select from pg_catalog.pg_snapshot_xip($1::pg_snapshot) x where pg_catalog.pg_xact_status(x) = 'in progress') as open", [snapshot])).rows[0]!;
      if (await this.drain(client) > 0) return false;
      if (!open) return true;
      await sleep(pause, undefined, { ref: false });
    }
  }

  /**
   * Takes up to DRAIN_BATCH messages from the outbox, oldest first, and delivers them. The batch is the
   * messages up to the batch's last id, one scan with a filter: written as a join with the batch
   * (`id in (select … limit)`), the planner chose a nested loop whenever the outbox's statistics said it
   * was empty, as its drainer's own vacuum leaves them when it cannot give back the pages, and a drain
   * of 40,000 messages took 13 s instead of 9 ms.
   */
  private async drain(client: pg.Client): Promise<number> {
    const { rows } = await client.query<{ message: string }>(DRAIN_SQL, [DRAIN_BATCH]);
    for (const { message } of rows) this.deliver(message);
    this.drainedSinceVacuum += rows.length;
    this.drainedSinceEmpty += rows.length;
    let due = this.drainedSinceVacuum >= VACUUM_EVERY;
    if (rows.length === 0 && this.drainedSinceEmpty > 0) {
      this.drainedSinceEmpty = 0;
      due = await this.outboxPages(client) > EMPTY_OUTBOX_PAGES;
    }
    if (due) {
      this.drainedSinceVacuum = 0;
      // Upkeep only: what was drained is delivered, and a connection that failed fails the next drain.
      await client.query('vacuum realtime.outbox').catch((err: Error) => this.log.warn({ err }, 'realtime: could not vacuum the outbox'));
    }
    return rows.length;
  }

  private async outboxPages(client: pg.Client): Promise<number> {
    const { rows } = await client.query<{ pages: number }>("select (pg_catalog.pg_relation_size('realtime.outbox') / current_setting('block_size')::int)::int as pages");
    return rows[0]!.pages;
  }
}

/** A latch for the doorbell's NOTIFY: a ring while nobody waits is kept for the next wait. */
class Bell {
  private rung = false;
  private waiting: (() => void) | undefined;

  ring(): void {
    this.rung = true;
    this.waiting?.();
  }

  reset(): void {
    this.rung = false;
  }

  /** Resolves when the bell rings (or has rung since the last reset), or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.rung) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms).unref();
      this.waiting = done;
    });
  }
}

function send(socket: WebSocket, frame: Frame): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
}

function reply(socket: WebSocket, [joinRef, ref, topic]: Frame, status: 'ok' | 'error', response: Record<string, unknown>): void {
  send(socket, [joinRef, ref, topic, 'phx_reply', { status, response }]);
}
