/**
 * The fetch Baton hands supabase-js: what supabase-js relies on, against a real HTTP server, both ways
 * it sends (undici's pool for a daemon or a server, Node's HTTP client for a one-shot command).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batonFetch } from '../src/client/http.js';
import { transport } from '../src/client/transport.js';
import { freePort } from '../src/stack/ports.js';

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/empty') return void res.writeHead(204).end();
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 5000);
      // A heartbeat's deadline is 5 s (requestDeadlines).
      if (req.url === '/rest/v1/rpc/send_heartbeat') return void setTimeout(() => res.end('{}'), 6000);
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ method: req.method, url: req.url, apikey: req.headers.apikey, body: Buffer.concat(chunks).toString() }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe.each([['through the pool', false], ['one-shot', true]])('batonFetch, %s', (_, oneShot) => {
  beforeAll(() => { transport.oneShot = oneShot; });
  afterAll(() => { transport.oneShot = false; });

  it('sends the method, headers and body, and answers with the status, every header and the body', async () => {
    const res = await batonFetch(`${base}/rest/v1/rpc/x?a=1`, {
      method: 'POST', headers: new Headers({ apikey: 'k', 'content-type': 'application/json' }), body: '{"p":1}',
    });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ method: 'POST', url: '/rest/v1/rpc/x?a=1', apikey: 'k', body: '{"p":1}' });
  });

  it('answers with a Response whose body reads once, as text, JSON, bytes, a blob or a stream, as any Response does', async () => {
    const post = () => batonFetch(`${base}/r`, { method: 'POST', body: 'é' });
    const expected = { method: 'POST', url: '/r', body: 'é' };
    const res = await post();
    expect(res).toBeInstanceOf(Response);
    expect(res.bodyUsed).toBe(false);
    const copy = res.clone();
    expect(JSON.parse(await res.text())).toEqual(expected);
    expect(res.bodyUsed).toBe(true);
    await expect(res.json()).rejects.toThrow(TypeError);
    expect(await copy.json()).toEqual(expected);
    expect(JSON.parse(new TextDecoder().decode(await (await post()).arrayBuffer()))).toEqual(expected);
    expect(JSON.parse(new TextDecoder().decode(await (await post()).bytes()))).toEqual(expected);
    const blob = await (await post()).blob();
    expect(blob.type).toBe('application/json');
    expect(JSON.parse(await blob.text())).toEqual(expected);
    // Through the stream: read there, and the body is used.
    const streamed = await post();
    expect(JSON.parse(await new Response(streamed.body).text())).toEqual(expected);
    expect(streamed.bodyUsed).toBe(true);
    await expect(streamed.text()).rejects.toThrow(TypeError);
  });

  it('answers 204 with no body', async () => {
    const res = await batonFetch(`${base}/empty`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
  });

  it('stops when its signal aborts, as fetch does', async () => {
    const err = await batonFetch(`${base}/slow`, { signal: AbortSignal.timeout(100) }).catch((e: unknown) => e);
    expect((err as Error).name).toMatch(/AbortError|TimeoutError/);
  });

  it('gives up on an answer past its deadline, as a failure to reach that says how long it waited', async () => {
    const err = await batonFetch(`${base}/rest/v1/rpc/send_heartbeat`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe('fetch failed');
    expect(((err as Error).cause as Error).message).toBe('no answer within 5 s');
  });

  it('reports an unreachable server as fetch does: a TypeError "fetch failed" whose cause says why', async () => {
    const port = await freePort();
    const err = await batonFetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe('fetch failed');
    expect(((err as Error).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });
});
