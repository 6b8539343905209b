/**
 * The generic agents' executor in the compose project: works for payload.seconds (default 1), saying
 * so every second, and reports which container did it. Stands in for a real agent's work, and is long
 * enough to stop or kill a container in the middle of it.
 */
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

export async function work(task, ctx) {
  const seconds = Number(task.payload.seconds ?? 1);
  for (let done = 0; done < seconds; done++) {
    await sleep(1000);
    await ctx.progress(`${done + 1} of ${seconds} s on ${os.hostname()}`);
  }
  return { status: 'success', summary: `worked ${seconds} s`, data: { host: os.hostname() } };
}
