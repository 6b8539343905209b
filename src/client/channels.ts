/**
 * Realtime channels shared by the listeners of one process. Hosted Realtime counts connections per
 * project and lets each hold at most 100 channels; a process that serves many agents (or a board that
 * follows every agent's topic) would, with one connection per listener, spend the plan's connections
 * long before its CPU. Here every listener of the process joins through one `Channels`: a topic is one
 * channel however many listeners want it (a message fans out to each), a connection holds at most
 * `perConnection` channels and the next ones open another, and each channel is joined with the token of
 * one of the agents listening on it, so that the database's policies on realtime.messages judge each
 * join as that agent (a connection may carry several agents' channels: hosted Realtime reads the join's
 * `access_token`, falling back to the connection's).
 */
import type { RealtimeChannel } from '@supabase/supabase-js';
import { agentApiKey, anotherConnection, connect, takeConnectionRefusal, type AgentKeyOptions, type BatonDb } from './connection.js';

/** How many channels hosted Realtime lets one connection hold, on every plan. */
export const HOSTED_CHANNELS_PER_CONNECTION = 100;

/** What a listener hears of its channel: each broadcast, and each change of the channel's state. */
export interface ChannelMember {
  broadcast(event: string, payload: unknown): void;
  /**
   * realtime-js's subscribe status; `connectionRefusal` is what Realtime said when it refused the
   * connection, if it did. `speaksFor` is how many listeners of the channel this one speaks for when it
   * says what became of the channel: all of them for the first, 0 for the others, so that a channel
   * shared by a thousand agents is reported once, not a thousand times.
   */
  status(status: string, err: Error | undefined, connectionRefusal: string | undefined, speaksFor: number): void;
}

interface Shared {
  channel: RealtimeChannel;
  connection: Connection;
  /** Each listener on the topic, with the token it joins with (none: the connection's own). */
  members: Map<ChannelMember, string | undefined>;
  /** The token the channel joins with now. */
  token: string | undefined;
  /** The channel's last status, told to a listener that joins it later. */
  last?: { status: string; err: Error | undefined };
}

interface Connection { db: BatonDb; topics: Set<string> }

export class Channels {
  private readonly connections: Connection[] = [];
  private readonly topics = new Map<string, Shared>();

  /**
   * `first` is the connection to start on (an agent's or the operator's own client); more open as
   * `open` makes them, once the ones open hold `perConnection` channels each.
   */
  constructor(
    private readonly open: () => BatonDb,
    private readonly perConnection = HOSTED_CHANNELS_PER_CONNECTION,
    first?: BatonDb,
  ) {
    if (first) this.connections.push({ db: first, topics: new Set() });
  }

  /** The channels over `db`'s connection, and over more like it when it is full: one set per client. */
  static of(db: BatonDb): Channels {
    let channels = shared.get(db);
    if (!channels) shared.set(db, channels = new Channels(() => anotherConnection(db), HOSTED_CHANNELS_PER_CONNECTION, db));
    return channels;
  }

  /** How many connections and channels are open now. */
  get counts(): { connections: number; channels: number } {
    return { connections: this.connections.filter((c) => c.topics.size > 0).length, channels: this.topics.size };
  }

  /**
   * Listens on the private channel `topic`, joining it (with `token`, an agent's access token, if the
   * connection does not carry one) unless another listener already has. Returns how to stop listening.
   */
  join(topic: string, member: ChannelMember, token?: string): () => Promise<void> {
    let entry = this.topics.get(topic);
    if (!entry) {
      // Not on a connection still leaving this topic's last channel (realtime-js would hand that one back).
      const leaving = (c: Connection) => c.db.realtime.getChannels().some((ch) => ch.topic === `realtime:${topic}`);
      const connection = this.connections.find((c) => c.topics.size < this.perConnection && !leaving(c)) ?? this.connect();
      connection.topics.add(topic);
      const channel = connection.db.channel(topic, { config: { private: true } });
      entry = { channel, connection, members: new Map(), token };
      const joined = entry;
      channel.on('broadcast', { event: '*' }, (message: { event?: string; payload?: unknown }) => {
        for (const m of [...joined.members.keys()]) m.broadcast(String(message.event ?? ''), message.payload);
      });
      if (token) channel.updateJoinPayload({ access_token: token });
      this.topics.set(topic, entry);
      entry.members.set(member, token);
      channel.subscribe((status, err) => {
        if (this.topics.get(topic) !== joined) return;
        joined.last = { status, err };
        const refusal = status === 'CHANNEL_ERROR' ? takeConnectionRefusal(connection.db) : undefined;
        const members = [...joined.members.keys()];
        members.forEach((m, i) => m.status(status, err, refusal, i === 0 ? members.length : 0));
      });
    } else {
      entry.members.set(member, token);
      const { last } = entry;
      if (last?.status === 'SUBSCRIBED') queueMicrotask(() => { if (entry!.members.has(member)) member.status('SUBSCRIBED', undefined, undefined, 1); });
    }
    const joined = entry;
    return () => this.leave(topic, joined, member);
  }

  private connect(): Connection {
    const connection = { db: this.open(), topics: new Set<string>() };
    this.connections.push(connection);
    return connection;
  }

  private async leave(topic: string, entry: Shared, member: ChannelMember): Promise<void> {
    if (!entry.members.delete(member)) return;
    if (entry.members.size > 0) {
      // Its next join (after a reconnect) goes with the token of an agent still listening.
      const next = [...entry.members.values()][0];
      if (entry.token !== next && next) {
        entry.token = next;
        entry.channel.updateJoinPayload({ access_token: next });
      }
      return;
    }
    if (this.topics.get(topic) === entry) this.topics.delete(topic);
    entry.connection.topics.delete(topic);
    await entry.connection.db.removeChannel(entry.channel);
    // A connection with no channel left is closed, so that nothing keeps the process alive and the
    // plan counts no idle connection.
    if (entry.connection.topics.size === 0 && entry.connection.db.realtime.getChannels().length === 0) entry.connection.db.realtime.disconnect();
  }
}

const shared = new WeakMap<BatonDb, Channels>();

/**
 * Channels for the agents of one process: connections of the project's API key alone, each channel
 * joined with the token of an agent listening on it.
 */
export function processChannels(options: { url: string } & AgentKeyOptions, perConnection = HOSTED_CHANNELS_PER_CONNECTION): Channels {
  const apiKey = agentApiKey(options);
  return new Channels(() => connect({ url: options.url, apiKey }), perConnection);
}
