/**
 * `baton mcp` over stdio, in the era the host opens with. A host of the 2025 eras opens with
 * `initialize` and is served by the 1.x line's server (2025-11-25 with its tasks, or 2025-06-18); a host
 * of 2026-07-28 sends `server/discover`, or any request, with the protocol version claimed in its
 * `_meta`, and is served by the 2.x line's stateless server (modern.ts). That claim is what the SDK's own
 * entries route on (`isLegacyRequest`); the first message decides, and the connection keeps its era.
 *
 * The agent says it is alive (and joins push) before the first request other than `server/discover` is
 * answered: a host's probe, which a 2026 client may send from a process of its own and then end, leaves
 * the agent's presence as it was.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { Logger } from '../logger.js';
import type { BatonMcp } from './server.js';

const PROTOCOL = 'io.modelcontextprotocol/protocolVersion';
const CLIENT = 'io.modelcontextprotocol/clientInfo';
const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

type Message = JSONRPCMessage & { method?: string; params?: { _meta?: Record<string, unknown> } };
/** The protocol revision a message claims in its `_meta`, if any: the mark of the 2026 era. */
const claimOf = (message: Message): unknown => message.params?._meta?.[PROTOCOL];

/**
 * The process's stdio as a transport whose messages wait, in order, until a server is connected and
 * started, and until what must come before each (the agent's start) has happened.
 */
class Relay implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly waiting: JSONRPCMessage[] = [];
  private started = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly inner: StdioServerTransport, private readonly before: (message: Message) => Promise<void>) {
    inner.onmessage = (message) => {
      this.chain = this.chain.then(() => this.before(message as Message)).then(() => this.hand(message), (err: Error) => this.onerror?.(err));
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (err) => this.onerror?.(err);
  }

  listen(): Promise<void> {
    return this.inner.start();
  }

  async start(): Promise<void> {
    this.started = true;
    // After the server's connect has returned: it sets its handlers, then starts the transport.
    setImmediate(() => { for (const message of this.waiting.splice(0)) this.onmessage?.(message); });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private hand(message: JSONRPCMessage): void {
    if (this.started && !this.waiting.length) this.onmessage?.(message);
    else this.waiting.push(message);
  }
}

/** Serves the host on stdio until it closes stdin (or the process is told to stop); then stops the agent's server. */
export async function serveBatonStdio(mcp: BatonMcp, log: Logger): Promise<{ closed: Promise<void>; stop(): Promise<void> }> {
  let started: Promise<void> | undefined;
  const startOnce = () => (started ??= mcp.start());
  let era: 'legacy' | 'modern' | undefined;
  let modern: { close(): Promise<void> } | undefined;
  let closedBy!: () => void;
  const closed = new Promise<void>((resolve) => { closedBy = resolve; });

  const inner = new StdioServerTransport();
  const relay: Relay = new Relay(inner, async (message) => {
    if (!era) {
      era = claimOf(message) === undefined ? 'legacy' : 'modern';
      if (era === 'legacy') {
        // Said once the handshake is done (server.ts), with what the host declared in it.
        await startOnce();
        await mcp.server.connect(relay as never);
      } else {
        // As the 2025 eras' handshake says it: the host, its protocol and its capabilities, from the first request's _meta.
        const meta = message.params?._meta ?? {};
        log.info({ host: meta[CLIENT], protocol: claimOf(message), capabilities: meta[CAPABILITIES], first: message.method }, 'host connected');
        modern = serveStdio(() => {
          const server = mcp.modern();
          // The connection's one server sends what changed on the host's subscriptions/listen stream.
          mcp.watch((uri) => server.server.sendResourceUpdated({ uri }));
          return server;
        }, { legacy: 'reject', transport: relay, onerror: (err) => log.warn({ err }, 'MCP over stdio') });
      }
    }
    // The agent is heard from before any request but the probe is answered.
    if (message.method && message.method !== 'server/discover' && 'id' in message) await startOnce();
  });
  relay.onclose = () => closedBy();
  await relay.listen();
  // serveStdio sets the relay's onclose; stdin's end is also said by the process.
  process.stdin.once('end', () => closedBy());
  process.stdin.once('close', () => closedBy());

  return {
    closed,
    async stop() {
      await modern?.close().catch(() => undefined);
      if (started) await mcp.stop();
      else await inner.close().catch(() => undefined);
    },
  };
}
