import net from 'node:net';
import { StackError } from './paths.js';

/** Fails with a clear error when something already listens on the port. */
export async function assertPortFree(port: number, what: string, flag: string): Promise<void> {
  const free = await new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
  if (!free) {
    throw new StackError(`port ${port} (${what}) is already in use`, `Stop whatever uses it, or choose another port with ${flag}.`);
  }
}

/** A port the OS says is free right now, other than those already chosen but not yet bound. */
export async function freePort(avoid: number[] = []): Promise<number> {
  for (;;) {
    const port = await osFreePort();
    if (!avoid.includes(port)) return port;
  }
}

function osFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
