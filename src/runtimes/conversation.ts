/**
 * A task as a conversation with an agent that Baton talks to in words (an OpenClaw gateway's agent, a
 * person's Codex session): the message that starts it, the one that carries an answer to the agent's
 * question, and the reply that ends it, read as the task's result.
 */
import type { ExecutorContext } from '../contract.js';
import type { Message, Task } from '../schemas.js';

/** A reply longer than this is attached as reply.md, its beginning kept as the summary. */
const SUMMARY_CHARS = 16_000;

/** A Baton task as the message that starts its conversation with the agent. */
export function workMessage(task: Task, ctx: Pick<ExecutorContext, 'attempt' | 'inputs'>): string {
  const { task_type: _type, ...payload } = task.payload;
  const lines = [`Baton task ${task.id} from ${task.from_agent}: ${task.title}`];
  if (task.description && task.description !== task.title) lines.push('', task.description);
  if (Object.keys(payload).length) lines.push('', `Payload: ${JSON.stringify(payload)}`);
  if (ctx.inputs.length) {
    lines.push('', 'Input artifacts (read one with: baton artifact get <task> <name>):');
    for (const a of ctx.inputs) lines.push(`- ${a.task_id} ${a.name} (${a.media_type}${a.uri ? `, ${a.uri}` : `, ${a.size_bytes} bytes`})`);
  }
  if (ctx.attempt > 1) lines.push('', `This is attempt ${ctx.attempt}: an earlier one did not finish.`);
  lines.push('', `Reply with the result when you are done: your reply is the task's result (start it with FAILED: if you cannot do it). To ask ${task.from_agent} something first, run \`baton ask ${task.id} "<question>"\` and end your turn; the answer comes back here.`);
  return lines.join('\n');
}

/** The sender's answer to the agent's question, as the next message of the same conversation. */
export function answerMessage(task: Task, answer: string): string {
  return `Answer from ${task.from_agent} to your question on Baton task ${task.id}:\n\n${answer}\n\nGo on with the task and reply with the result.`;
}

/**
 * The agent's last reply as the task's result; a long one attached whole as reply.md. A reply that
 * starts with FAILED: (the skill's word for "I cannot do this") fails the attempt: the agent's
 * decision, which no retry changes. Every runtime that ends in a reply (OpenClaw, a Codex session, the
 * coding CLIs) reads it here.
 */
export async function replyResult(reply: string, ctx: Pick<ExecutorContext, 'artifact'>, who: string): Promise<{ status: 'success'; summary: string }> {
  const text = reply.trim();
  const failed = /^FAILED:\s*/i.exec(text);
  if (failed) throw new Error(`${who} could not do it: ${text.slice(failed[0].length) || 'it gave no reason'}`);
  if (text.length <= SUMMARY_CHARS) return { status: 'success', summary: text || `done (${who} replied with no text)` };
  await ctx.artifact('reply.md', text, { mediaType: 'text/markdown' });
  return { status: 'success', summary: `${text.slice(0, SUMMARY_CHARS)}\n… (the whole reply is the artifact reply.md)` };
}

/** What tells an agent the news of the tasks it handed over (the daemon's `tell`). */
export interface Teller {
  onResult(task: Task): Promise<void>;
  onQuestion(task: Task, message: Message): Promise<void>;
}

/** A task the agent handed over has ended: how, by whom, and its summary. */
export function resultNews(task: Task): string {
  const by = task.claimed_by ?? task.to_agent ?? 'nobody';
  const lines = [`Baton task ${task.id} "${task.title}", which you handed over, is ${task.status} (by ${by}).`];
  const summary = task.result?.summary ?? task.status_reason;
  if (summary) lines.push('', summary);
  lines.push('', `Details: baton show ${task.id}`);
  return lines.join('\n');
}

/** The worker of a task the agent handed over asks it something, and how to answer. */
export function questionNews(task: Task, asked: Message): string {
  const body = asked.body as { text?: unknown };
  const question = typeof body.text === 'string' ? body.text : JSON.stringify(asked.body);
  return [
    `${asked.from_agent} asks about Baton task ${task.id} "${task.title}", which you handed over:`, '', question, '',
    `Answer with: baton answer ${task.id} "<your answer>"`,
  ].join('\n');
}
