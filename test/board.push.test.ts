/**
 * The operator's board keeps push as agents register: it joins each newcomer's topic with the same
 * connection, and a task handed to the newcomer reaches the open pages by push (its id in the change,
 * which the board's slow look never carries). With the project's secret key (sb_secret_…, not a JWT)
 * as the operator's key, supabase-js used to send that key as the new join's access token, and the
 * join was refused for good ("this is not a JWT"): the board fell back to polling.
 */
import { EventEmitter } from 'node:events';
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoardData } from '../src/board/data.js';
import { BoardFeed } from '../src/board/feed.js';
import { silentLogger } from '../src/logger.js';
import { eventually } from './daemon-helpers.js';
import { admin, newAgent, type TestAgent } from './helpers.js';

/** An open page of the board: what its event stream received. */
function openPage(feed: BoardFeed): { frames: string[]; close: () => void } {
  const frames: string[] = [];
  const req = new EventEmitter() as http.IncomingMessage;
  const res = { writeHead: () => res, write: (frame: string) => { frames.push(frame); return true; }, end: () => undefined } as unknown as http.ServerResponse;
  feed.stream(req, res, {});
  return { frames, close: () => req.emit('close') };
}

describe('the operator\'s board', () => {
  let feed: BoardFeed;
  let sender: TestAgent;

  beforeAll(async () => {
    sender = await newAgent('board-push-sender');
    feed = new BoardFeed(new BoardData({ kind: 'operator', admin }), silentLogger, 500);
    await feed.start();
    await eventually(async () => feed.pushUp, 30_000, 'the board to listen');
  });
  afterAll(async () => {
    await feed?.stop();
  });

  it('hears by push of the work handed to agents that registered after it opened', async () => {
    const page = openPage(feed);
    try {
      for (const name of ['board-newcomer-1', 'board-newcomer-2']) {
        const newcomer = await newAgent(name, { capabilities: [`${name}-skill`] });
        // Handed again until the board has joined the newcomer's topic; only push names the task.
        await eventually(async () => {
          const task = await sender.client.handoff({ to: newcomer.id, title: `for ${name}`, allowOffline: true });
          await new Promise((r) => setTimeout(r, 1500));
          return page.frames.some((f) => f.startsWith('event: change') && f.includes(task.id));
        }, 60_000, `a task handed to ${name} to reach the board by push`);
        // Up again once any topic joined meanwhile is joined (other files register agents on the same stack).
        await eventually(async () => feed.pushUp, 30_000, 'every topic joined');
      }
      expect(page.frames.filter((f) => f.startsWith('event: push'))).not.toContainEqual(expect.stringContaining('"up":false'));
    } finally {
      page.close();
    }
  }, 180_000);
});
