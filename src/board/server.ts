/**
 * `baton board`: a local web server for the board page and the small JSON + server-sent-events API
 * behind it. The server holds the identity (an agent's token, or the operator's secret key), never the
 * browser. The page is reached once with a random access token in the URL (as Jupyter does), which
 * becomes an HttpOnly, SameSite=Strict session cookie; every write is a POST carrying that session's
 * CSRF token; and a Host header that names another site is refused (DNS rebinding).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { BatonError, httpStatusOf } from '../errors.js';
import { packageRoot } from '../stack/paths.js';
import type { Logger } from '../logger.js';
import { BoardData, type BoardAction } from './data.js';
import { BoardFeed } from './feed.js';

export interface BoardOptions {
  data: BoardData;
  host?: string;
  port?: number;
  /** The access token the URL carries; random unless given (tests, or a fixed bookmark). */
  accessToken?: string;
  log: Logger;
  /** How often the board looks for changes push would not tell it of (its own hand-offs, an outage). */
  pollMs?: number;
}

export interface Board {
  /** The URL to open, with the access token. */
  url: string;
  origin: string;
  accessToken: string;
  close(): Promise<void>;
}

/** The page, bundled by `npm run build` (scripts/build-board.mjs). */
const staticDir = path.join(packageRoot, 'dist', 'board', 'static');
const assets: Record<string, string> = { '/board.js': 'text/javascript; charset=utf-8', '/board.css': 'text/css; charset=utf-8', '/favicon.svg': 'image/svg+xml' };
const loopbacks = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const cookieName = 'baton_board';
const securityHeaders = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly hint?: string, readonly code = `HTTP${status}`) {
    super(message);
  }
}

const same = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

export async function startBoard(options: BoardOptions): Promise<Board> {
  return new BoardServer(options).listen(options.port ?? 0);
}

/**
 * The server behind one board: who may look (the access token, the session cookie it becomes, the
 * CSRF token of a session's writes) and what each path answers.
 */
class BoardServer {
  private readonly host: string;
  private readonly accessToken: string;
  private readonly sessions = new Map<string, { csrf: string }>();
  private readonly data: BoardData;
  private readonly log: Logger;
  private readonly feed: BoardFeed;
  private readonly server = http.createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => this.failed(req, res, err));
  });

  constructor(options: BoardOptions) {
    this.host = options.host ?? '127.0.0.1';
    this.accessToken = options.accessToken ?? crypto.randomBytes(24).toString('base64url');
    this.data = options.data;
    this.log = options.log;
    this.feed = new BoardFeed(options.data, options.log, options.pollMs ?? 1000);
  }

  async listen(port: number): Promise<Board> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, this.host, () => resolve());
    });
    await this.feed.start();
    const { host, accessToken, server, feed } = this;
    const origin = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
    return {
      url: `${origin}/?token=${accessToken}`,
      origin,
      accessToken,
      async close() {
        await feed.stop();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  private hostAllowed(header: string | undefined): boolean {
    if (!loopbacks.has(this.host)) return true;
    return loopbacks.has((header ?? '').replace(/:\d+$/, ''));
  }

  /** The caller's session: a page's (its cookie, and the CSRF token its writes must carry), or a script's (the access token as Bearer). */
  private session(req: http.IncomingMessage): { csrf: string; bearer?: true } | undefined {
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ') && same(auth.slice(7), this.accessToken)) return { csrf: '', bearer: true };
    const cookie = (req.headers.cookie ?? '').split(/;\s*/).find((c) => c.startsWith(`${cookieName}=`));
    return cookie ? this.sessions.get(cookie.slice(cookieName.length + 1)) : undefined;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!this.hostAllowed(req.headers.host)) throw new HttpError(403, 'the Host header names another site', 'Open the URL baton board printed.');
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
    const given = url.searchParams.get('token');
    if (given !== null) return this.signIn(res, url, given);
    if (req.method === 'GET' && assets[url.pathname]) {
      return send(res, 200, fs.readFileSync(path.join(staticDir, url.pathname.slice(1))), assets[url.pathname]!, { 'cache-control': 'no-cache' });
    }
    const me = this.session(req);
    if (!me) {
      if (url.pathname.startsWith('/api/')) throw new HttpError(401, 'this board needs its access token', 'Open the URL baton board printed (it carries ?token=…).');
      return send(res, 401, fs.readFileSync(path.join(staticDir, 'locked.html')), 'text/html; charset=utf-8');
    }
    if (url.pathname.startsWith('/api/')) return this.api(req, res, url, me);
    if (req.method !== 'GET') throw new HttpError(405, `${req.method} ${url.pathname} is not served`);
    return send(res, 200, fs.readFileSync(path.join(staticDir, 'index.html')), 'text/html; charset=utf-8');
  }

  /** The access token in the URL becomes a session; the token leaves the address bar (and history) at once. */
  private signIn(res: http.ServerResponse, url: URL, given: string): void {
    if (!same(given, this.accessToken)) throw new HttpError(401, 'that access token is not this board\'s', 'Open the URL baton board printed.');
    const id = crypto.randomBytes(24).toString('base64url');
    this.sessions.set(id, { csrf: crypto.randomBytes(24).toString('base64url') });
    url.searchParams.delete('token');
    res.writeHead(303, { ...securityHeaders, location: `${url.pathname}${url.search}`, 'set-cookie': `${cookieName}=${id}; HttpOnly; SameSite=Strict; Path=/` });
    res.end();
  }

  private async api(req: http.IncomingMessage, res: http.ServerResponse, url: URL, { csrf, bearer }: { csrf: string; bearer?: true }): Promise<void> {
    const route = url.pathname.slice('/api/'.length);
    if (req.method === 'POST') {
      // A form or script on another site cannot read the CSRF token, so it cannot send it. A script
      // with the access token as Bearer needs none: no browser sends that header by itself.
      const given = String(req.headers['x-csrf-token'] ?? '');
      if (!bearer && (!csrf || !same(given, csrf))) throw new HttpError(403, 'a write needs the page\'s CSRF token', 'Reload the board and try again.', 'CSRF');
      if (route !== 'actions') throw new HttpError(404, `no action at ${url.pathname}`);
      return json(res, 200, await this.data.act(await body(req) as BoardAction));
    }
    if (req.method !== 'GET') throw new HttpError(405, `${req.method} is not served; reads are GET, actions POST /api/actions`);
    const parts = pathParts(route, url.pathname);
    const { data } = this;
    switch (parts[0]) {
      case 'session': return json(res, 200, { ...data.who, csrf, push: this.feed.pushUp });
      case 'overview': return json(res, 200, await data.overview());
      case 'agents': return json(res, 200, await data.agents());
      case 'tasks':
        if (parts.length === 1) return json(res, 200, await data.tasks(Object.fromEntries(url.searchParams)));
        if (parts.length === 2) return json(res, 200, await data.task(parts[1]!));
        if (parts.length === 4 && parts[2] === 'artifacts') return this.download(res, parts[1]!, parts[3]!);
        break;
      case 'dead-letters': return json(res, 200, await data.deadLetters());
      case 'schedules': return json(res, 200, await data.schedules());
      case 'spend': return json(res, 200, await data.spend());
      case 'events': return this.feed.stream(req, res, securityHeaders);
    }
    throw new HttpError(404, `nothing at ${url.pathname}`);
  }

  private async download(res: http.ServerResponse, taskId: string, name: string): Promise<void> {
    const a = await this.data.artifact(taskId, name);
    if (!a.content) return json(res, 200, { uri: a.uri });
    // Served as a download, never rendered here: an artifact is whatever an agent wrote. Only the media
    // type's type/subtype goes into the header (rows stored before its parameters were checked may hold anything).
    const essence = /^[a-z]+\/[A-Za-z0-9.+_-]+/.exec(a.mediaType)?.[0] ?? 'application/octet-stream';
    send(res, 200, a.content, essence.startsWith('text/') || essence.includes('json') ? `${essence}; charset=utf-8` : 'application/octet-stream', {
      'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
      'content-security-policy': "default-src 'none'; sandbox",
    });
  }

  /** A request that failed: its refusal as JSON, with the status that says whose the fault is. */
  private failed(req: http.IncomingMessage, res: http.ServerResponse, err: unknown): void {
    const status = err instanceof HttpError ? err.status : err instanceof BatonError ? httpStatusOf(err) : err instanceof Error && err.name === 'ZodError' ? 400 : 500;
    const payload = err instanceof HttpError ? { code: err.code, message: err.message, hint: err.hint ?? null }
      : err instanceof BatonError ? { code: err.code, message: err.message, hint: err.hint }
        : err instanceof Error && err.name === 'ZodError' ? { code: 'BAD_REQUEST', message: err.message, hint: 'Check the values sent.' }
          : { code: 'INTERNAL', message: 'the board could not answer', hint: 'See the board\'s log.' };
    if (status >= 500) this.log.error({ err, url: req.url }, 'board request failed');
    if (!res.headersSent) json(res, status, payload);
    else res.end();
  }
}

function send(res: http.ServerResponse, status: number, body: string | Buffer, type: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...securityHeaders, 'content-type': type, ...extra });
  res.end(body);
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
}

/** A request's JSON body, of at most 64 KiB. */
async function body(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 64 * 1024) throw new HttpError(413, 'the request is larger than 64 KiB');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch {
    throw new HttpError(400, 'the request body is not JSON', 'Send a JSON object.');
  }
}

/** An API path's parts, percent-decoded. */
function pathParts(route: string, pathname: string): string[] {
  return route.split('/').map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new HttpError(400, `the path ${pathname} is not valid percent-encoding`, 'Encode the task id and artifact name with encodeURIComponent.');
    }
  });
}

