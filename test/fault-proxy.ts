/**
 * A TCP proxy that stands between one daemon and the API (its HTTP requests and its Realtime WebSocket
 * alike), switched between faults a real network makes:
 *
 * - pass: as if it were not there;
 * - delay: each chunk waits 50-1,500 ms, in order;
 * - reset: every connection is reset (RST), and each new one at once;
 * - blackhole: connections are accepted and nothing is forwarded, until the mode changes: then what was
 *   held goes through, late, as TCP delivers after a partition heals;
 * - drop-responses: requests go through (and commit), answers never come back;
 * - cut: answers are cut midway, and the connection closed;
 * - half-open: the connections open now, and those made while it lasts, die without a word (no FIN, no
 *   RST) and stay dead after it ends; new connections after it work.
 */
import net from 'node:net';

export const faultModes = ['pass', 'delay', 'reset', 'blackhole', 'drop-responses', 'cut', 'half-open'] as const;
export type FaultMode = (typeof faultModes)[number];

interface Pipe {
  client: net.Socket;
  upstream: net.Socket;
  dead: boolean;
  /** What a blackhole held, by direction, to deliver when it ends. */
  held: { up: Buffer[]; down: Buffer[] };
  /** The end of the queue of delayed chunks, by direction, so they stay in order. */
  queue: { up: Promise<void>; down: Promise<void> };
}

export class FaultProxy {
  private mode: FaultMode = 'pass';
  private readonly pipes = new Set<Pipe>();
  private readonly server: net.Server;
  /** How many connections it accepted, and chunks it dropped, for the run's report. */
  readonly counts = { connections: 0, dropped: 0, resets: 0 };
  /** Requests seen on their way up whose request line matches one of these, counted by name. */
  private readonly watched = new Map<string, { pattern: RegExp; seen: number }>();

  constructor(private readonly target: { host: string; port: number }, private readonly random: () => number = Math.random) {
    this.server = net.createServer((client) => this.accept(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Counts from now on the requests whose request line ("GET /rest/v1/… HTTP/1.1") matches `pattern`. */
  watch(name: string, pattern: RegExp): void {
    this.watched.set(name, { pattern, seen: 0 });
  }

  /** How many requests matched the pattern watched as `name`. */
  seen(name: string): number {
    return this.watched.get(name)?.seen ?? 0;
  }

  get current(): FaultMode {
    return this.mode;
  }

  set(mode: FaultMode): void {
    const was = this.mode;
    this.mode = mode;
    if (mode === 'reset') for (const pipe of this.pipes) this.reset(pipe);
    if (mode === 'half-open') for (const pipe of this.pipes) pipe.dead = true;
    if (was === 'blackhole' && mode !== 'blackhole') {
      for (const pipe of this.pipes) {
        const { up, down } = pipe.held;
        pipe.held = { up: [], down: [] };
        for (const chunk of up) this.forward(pipe, 'up', chunk);
        for (const chunk of down) this.forward(pipe, 'down', chunk);
      }
    }
  }

  async close(): Promise<void> {
    for (const pipe of this.pipes) { pipe.client.destroy(); pipe.upstream.destroy(); }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.counts.connections += 1;
    const upstream = net.connect(this.target.port, this.target.host);
    const pipe: Pipe = { client, upstream, dead: this.mode === 'half-open', held: { up: [], down: [] }, queue: { up: Promise.resolve(), down: Promise.resolve() } };
    this.pipes.add(pipe);
    const end = () => {
      this.pipes.delete(pipe);
      // A dead connection says nothing to either side, ever.
      if (pipe.dead) return;
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => this.forward(pipe, 'up', chunk));
    upstream.on('data', (chunk: Buffer) => this.forward(pipe, 'down', chunk));
    if (this.mode === 'reset') this.reset(pipe);
  }

  private forward(pipe: Pipe, way: 'up' | 'down', chunk: Buffer): void {
    const to = way === 'up' ? pipe.upstream : pipe.client;
    if (way === 'up' && this.watched.size) {
      const text = chunk.toString('latin1');
      for (const line of text.match(/^[A-Z]+ \S+ HTTP\/1\.1$/gm) ?? []) for (const w of this.watched.values()) if (w.pattern.test(line)) w.seen += 1;
    }
    if (pipe.dead) { this.counts.dropped += 1; return; }
    switch (this.mode) {
      case 'pass':
        return void to.write(chunk);
      case 'delay': {
        const wait = 50 + this.random() * 1450;
        pipe.queue[way] = pipe.queue[way].then(() => new Promise((resolve) => setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
          resolve();
        }, wait)));
        return;
      }
      case 'reset':
        return this.reset(pipe);
      case 'blackhole':
        return void pipe.held[way].push(chunk);
      case 'drop-responses':
        if (way === 'up') return void to.write(chunk);
        this.counts.dropped += 1;
        return;
      case 'cut':
        if (way === 'up') return void to.write(chunk);
        to.write(chunk.subarray(0, Math.floor(chunk.length / 2)));
        pipe.client.destroy();
        pipe.upstream.destroy();
        return;
      case 'half-open':
        pipe.dead = true;
        this.counts.dropped += 1;
    }
  }

  private reset(pipe: Pipe): void {
    this.counts.resets += 1;
    pipe.client.resetAndDestroy();
    pipe.upstream.destroy();
  }
}
