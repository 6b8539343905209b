/**
 * Delivering to a sender's daemon what came back on the tasks it sent: results and questions, each
 * to its handler once, oldest first.
 */
import type { Logger } from 'pino';
import type { BatonClient } from '../client/agent.js';
import type { AgentOptions } from './options.js';

/**
 * Runs `onResult` once for each result message of a task this agent sent, and `onQuestion` once for
 * each question asked on one, oldest first; each message is marked read once its handler succeeded.
 * Says how many handlers failed (their messages stay unread, for the next delivery).
 */
export async function deliverResults(client: BatonClient, handlers: Pick<AgentOptions, 'onResult' | 'onQuestion'>, log: Logger): Promise<number> {
  let failed = 0;
  for (const kind of ['question', 'result'] as const) {
    const handler = kind === 'result' ? handlers.onResult : handlers.onQuestion;
    if (!handler) continue;
    const messages = await client.messages({ unread: true, kind, limit: 100 });
    for (const message of messages.reverse()) {
      if (!message.task_id) continue;
      try {
        await handler(await client.getTask(message.task_id), message);
      } catch (err) {
        log.error({ err, taskId: message.task_id }, `${kind === 'result' ? 'onResult' : 'onQuestion'} failed; it will run again`);
        failed += 1;
        continue;
      }
      await client.markRead([message.id]);
    }
  }
  return failed;
}
