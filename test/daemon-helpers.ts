import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, expect } from 'vitest';
import { createAgent, type AgentOptions, type BatonAgent } from '../src/agent/daemon.js';
import { stack, type TestAgent } from './helpers.js';
import { agentKey } from './keys-mode.js';

/** Fast schedules for tests: claim every second, heartbeat every two. */
export const fast = { poll: '* * * * * *', heartbeat: '*/2 * * * * *' } as const;

const started: BatonAgent[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((a) => a.stop({ graceSeconds: 0 })));
});

/** A daemon for `agent`, stopped after the test; its log lines are collected in `lines`. */
export async function daemon(agent: TestAgent, options: Partial<AgentOptions> = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
  const instance = createAgent({
    url: stack.SUPABASE_URL, ...agentKey(stack), token: agent.token, ...fast,
    log: pino({ level: 'debug' }, sink), ...options,
  });
  started.push(instance);
  await instance.start();
  return { instance, lines };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function eventually<T>(check: () => Promise<T | undefined | false | null>, timeoutMs = 20_000, what = 'the condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) expect.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
