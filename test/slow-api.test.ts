/**
 * An API that is slow, not away: the daemon's claims get no answer within their deadline while its
 * heartbeats are answered (a busy database, a saturated machine). It says once that the API is slow,
 * declares no outage (so nothing that follows an outage's end runs: push listened to again, every
 * wake-up rung), polls less often meanwhile, and claims work as soon as the API answers in time. A
 * daemon that starts into a slow API (a fleet starting at once) tries its start again, spaced out,
 * instead of giving up.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack } from './helpers.js';

/**
 * An HTTP proxy to the API that, while `slow` is set, holds each claim 6 s before passing it on, and
 * holds the first `startsHeld` starts of a process (begin_incarnation) 6 s.
 */
async function slowProxy() {
  const upstream = new URL(stack.SUPABASE_URL);
  const state = { slow: false, held: 0, startsHeld: 0, starts: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const starting = req.url?.includes('/rpc/begin_incarnation') && state.starts++ < state.startsHeld;
      const hold = (state.slow && req.url?.includes('/rpc/claim_next_tasks')) || starting ? 6000 : 0;
      if (hold) state.held += 1;
      setTimeout(() => {
        const out = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(Buffer.concat(chunks));
      }, hold);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) };
}

let proxy: Awaited<ReturnType<typeof slowProxy>> | undefined;
afterEach(async () => {
  if (proxy) proxy.state.slow = false;
  await proxy?.close();
  proxy = undefined;
});

describe('an API that is slow, not away', { timeout: 120_000 }, () => {
  it('is said once to be slow, with no outage declared, and work is claimed once it answers in time', async () => {
    const sender = await newAgent('sender');
    const worker = await newAgent('slow-worker');
    proxy = await slowProxy();
    proxy.state.slow = true;
    const { lines } = await daemon(worker, {
      url: proxy.url, push: false,
      executors: { '*': async () => ({ status: 'success', summary: 'done' }) },
    });
    await eventually(async () => lines.some((l) => String(l.msg).includes('the API is slow')), 60_000, 'the daemon saying the API is slow');
    // Two more claims held past their deadline, and each still no outage.
    const held = proxy.state.held;
    await eventually(async () => proxy!.state.held >= held + 2, 90_000, 'two more claims held');
    proxy.state.slow = false;

    const task = await sender.client.handoff({ to: worker.id, title: 'after the slow spell' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'completed', 90_000, 'the task completed');
    const said = lines.filter((l) => String(l.msg).includes('the API is slow'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40 });
    expect(lines.filter((l) => /is away|the API answers again/.test(String(l.msg)))).toEqual([]);
    expect(lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
  });

  it('starts into a slow API: says so once, tries its start again spaced out, and then works', async () => {
    const sender = await newAgent('sender');
    const worker = await newAgent('slow-starter');
    proxy = await slowProxy();
    proxy.state.startsHeld = 1;
    const { lines } = await daemon(worker, { url: proxy.url, push: false, executors: { '*': async () => ({ status: 'success', summary: 'done' }) } });
    // Started: the first start got no answer within its deadline, the second did.
    expect(proxy.state.starts).toBe(2);
    const said = lines.filter((l) => String(l.msg).includes('as this daemon starts'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40 });
    const task = await sender.client.handoff({ to: worker.id, title: 'after a slow start' });
    await eventually(async () => (await sender.client.getTask(task.id)).status === 'completed', 90_000, 'the task completed');
    expect(lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});
