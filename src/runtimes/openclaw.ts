/**
 * Baton and an OpenClaw gateway, through the gateway's A2A channel (`channels.a2a`, with a peer whose
 * token Baton presents). Two directions:
 *
 * - the `openclaw` executor: a Baton agent's work is done by the gateway's agent. Each task is one
 *   conversation (A2A context `baton-<task id>`, so one OpenClaw session per task); the reply is the
 *   result. The gateway's agent asks the sender with `baton ask` (the skill teaches it); the answer comes
 *   back into the same conversation.
 * - the teller: results of, and questions about, the tasks a Baton agent sent are told to the gateway's
 *   agent as messages, so it is woken when there is news and never polls.
 *
 * What OpenClaw's channel does not do, and how this meets it: it neither streams nor cancels (the reply
 * is waited for, then read with GetTask, slowly: the channel allows 30 requests a minute per peer by
 * default); it keeps its tasks in memory (a restarted gateway answers TaskNotFound, and the task is
 * retried after a backoff); it reads text and data parts only (the task goes as text, its inputs named).
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Role, TaskState, type Task as A2ATask } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, type Client } from '@a2a-js/sdk/client';
import { neverReached, RetryableError, UnavailableError, type AgentRuntime, type ExecutorContext, type Handler } from '../contract.js';
import { finalStates, message, textOf, textPart } from '../a2a/mapping.js';
import { z } from 'zod';
import { ConfigError, namedVariable } from '../config.js';
import type { Logger } from '../logger.js';
import { answerMessage, questionNews, replyResult, resultNews, workMessage, type Teller } from './conversation.js';
import { skillsInHome } from './skills.js';
import type { Message, Task } from '../schemas.js';

export interface OpenClawGatewayOptions {
  /** The gateway's base URL (its A2A card is at /.well-known/agent-card.json), e.g. http://127.0.0.1:18789. */
  url: string;
  /** The token of the gateway's A2A peer that stands for Baton (`channels.a2a.peers.<name>.token`). */
  token: string;
}

/** How often a reply still on its way is read (the channel's default limit is 30 requests a minute per peer). */
const READ_EVERY_MS = 10_000;
/** How long the gateway may go unanswering while its agent works, before the task is retried. */
const UNREACHABLE_MS = 5 * 60_000;

/** One gateway's A2A client, made from its card on first use (and again after a failure). */
function gatewayClient({ url, token }: OpenClawGatewayOptions, returnImmediately: boolean) {
  let connecting: Promise<Client> | undefined;
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { clientConfig: { polling: returnImmediately } });
  const serviceParameters = { Authorization: `Bearer ${token}` };
  const connect = () => {
    connecting ??= new ClientFactory(options).createFromUrl(url.endsWith('/') ? url : `${url}/`).catch((err: unknown) => {
      connecting = undefined;
      throw new UnavailableError(`could not reach the OpenClaw gateway at ${url}: ${(err as Error).message}`, { cause: err });
    });
    return connecting;
  };
  return {
    serviceParameters,
    async send(contextId: string, text: string, signal?: AbortSignal): Promise<A2ATask | undefined> {
      const client = await connect();
      const request = message(Role.ROLE_USER, [textPart(text)], { messageId: crypto.randomUUID(), taskId: '', contextId });
      const answer = await client.sendMessage({ tenant: '', message: request, configuration: undefined, metadata: {} }, { serviceParameters, signal })
        .catch((err: unknown) => { connecting = undefined; throw err; });
      return 'status' in answer ? answer : undefined;
    },
    async get(id: string, signal: AbortSignal): Promise<A2ATask> {
      return (await connect()).getTask({ tenant: '', id, historyLength: 0 }, { serviceParameters, signal });
    },
  };
}

const replyText = (task: A2ATask) => task.artifacts.map((a) => textOf(a)).filter(Boolean).join('\n');
/**
 * OpenClaw's own words for a turn that failed before its agent replied (its state database busy, its
 * model answering 500 or 400: "⚠️ Agent failed before reply", "⚠️ … request failed (provider internal
 * error, HTTP 500)", "LLM request failed: provider rejected the request"), which its A2A channel sends
 * as the turn's reply, so the A2A task reads completed: such a turn failed, and is never a result.
 */
const failedBeforeReply = /^(⚠️|LLM request failed:)/u;
/** The turn's state, a completed one whose reply is OpenClaw's failure read as failed. */
const stateOf = (task: A2ATask) => (task.status?.state === TaskState.TASK_STATE_COMPLETED && failedBeforeReply.test(replyText(task) || statusText(task))
  ? TaskState.TASK_STATE_FAILED : task.status?.state);
const statusText = (task: A2ATask) => (task.status?.message ? textOf(task.status.message) : '');
/** The gateway refused the peer's token: the daemon's configuration, not the task, is at fault. */
const refusedToken = (err: unknown) => err instanceof Error && /\b(401|403)\b|unauthori[sz]ed|forbidden/i.test(err.message);
/** A2A's TaskNotFound (-32001), read from the error's words: its class's name does not survive the CLI's bundle. */
const isNotFound = (err: unknown) => err instanceof Error && /task not found|-32001/i.test(err.message);

/**
 * The `openclaw` executor: the task goes to the gateway's agent as a conversation of its own, and its
 * reply completes the Baton task. A question asked meanwhile with `baton ask` holds no slot; its answer
 * goes into the same conversation, and the reply that follows completes the task.
 */
export function openclawExecutor(options: OpenClawGatewayOptions): Handler {
  const gateway = gatewayClient(options, false);
  return async (task: Task, ctx: ExecutorContext) => {
    // One conversation per attempt: a gateway that crashed during an attempt resumes that conversation's
    // interrupted run when it starts again (its restart recovery), and a retry sent into it would wait
    // behind that run, its own task never ending.
    const contextId = ctx.attempt > 1 ? `baton-${task.id}-${ctx.attempt}` : `baton-${task.id}`;
    let text = workMessage(task, ctx);
    for (;;) {
      const reply = await replyTo(gateway, contextId, text, ctx, options.url);
      const answer = await ctx.answered();
      if (answer === undefined) return replyResult(reply, ctx, 'the OpenClaw agent');
      ctx.log.info({ contextId }, 'the gateway\'s agent asked, and was answered; its answer goes into the same conversation');
      text = answerMessage(task, answer);
    }
  };
}

/** Sends one message on the task's conversation and waits for the gateway agent's reply to it. */
async function replyTo(gateway: ReturnType<typeof gatewayClient>, contextId: string, text: string, ctx: ExecutorContext, url: string): Promise<string> {
  let remote: A2ATask | undefined;
  try {
    remote = await gateway.send(contextId, text, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted || err instanceof RetryableError) throw err;
    if (refusedToken(err)) throw new UnavailableError(`the OpenClaw gateway at ${url} refused Baton's peer token (${(err as Error).message}): a configuration error, which costs the task no attempt; set the peer's token (tokenEnv) to the one in the gateway's channels.a2a.peers`, { cause: err });
    if (neverReached(err)) throw new UnavailableError(`could not reach the OpenClaw gateway at ${url}: ${(err as Error).message}`, { cause: err });
    // Taken, maybe, and then lost (the gateway went away during the call): the run counts, and goes again.
    throw new RetryableError(`the OpenClaw gateway at ${url} did not answer for the task: ${(err as Error).message}`, { cause: err });
  }
  if (!remote) throw new Error(`the OpenClaw gateway at ${url} answered with a message, not a task`);
  let heardAt = Date.now();
  while (!finalStates.includes(remote.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
    await sleep(READ_EVERY_MS, undefined, { signal: ctx.signal });
    try {
      remote = await gateway.get(remote.id, ctx.signal);
      heardAt = Date.now();
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (isNotFound(err)) throw new RetryableError(`the OpenClaw gateway at ${url} no longer knows its run of the task (it restarted?); the task goes again`, { cause: err });
      if (Date.now() - heardAt > UNREACHABLE_MS) throw new RetryableError(`lost the OpenClaw gateway at ${url} while its agent worked: ${(err as Error).message}`, { cause: err });
      ctx.log.warn({ err }, 'could not read the gateway\'s run of the task; trying again');
    }
  }
  const state = stateOf(remote);
  if (state === TaskState.TASK_STATE_COMPLETED) return replyText(remote) || statusText(remote) || '';
  const why = statusText(remote) || replyText(remote) || 'no reason given';
  // A rejection is the gateway's policy (a slash command, a peer it does not admit): no retry will pass.
  if (state === TaskState.TASK_STATE_REJECTED) throw new Error(`the OpenClaw gateway at ${url} rejected the task: ${why}`);
  throw new RetryableError(`the OpenClaw agent at ${url} failed the task: ${why}`);
}

/** How many times news whose turn failed in the gateway is told again. */
const TELL_ATTEMPTS = 3;

/**
 * Tells the gateway's agent what became of the tasks its Baton agent sent: results, and questions to
 * answer. The message is sent without waiting for the agent's turn (the daemon's loop goes on); the
 * turn is then followed in the background, and one that the gateway failed (its model away, its state
 * busy) is told again, up to TELL_ATTEMPTS times in all, so that news is not lost to a hiccup.
 */
export function openclawTeller(options: OpenClawGatewayOptions & { log?: Pick<Logger, 'warn'> }): Teller {
  const gateway = gatewayClient(options, true);
  const follow = async (contextId: string, text: string, sent: A2ATask, attempt: number): Promise<void> => {
    let turn = sent;
    const signal = new AbortController().signal;
    while (!finalStates.includes(turn.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
      await sleep(READ_EVERY_MS, undefined, { ref: false });
      turn = await gateway.get(turn.id, signal);
    }
    if (stateOf(turn) !== TaskState.TASK_STATE_FAILED) return;
    options.log?.warn({ contextId, attempt, why: statusText(turn) || replyText(turn) }, attempt < TELL_ATTEMPTS ? 'the gateway failed the turn that was told the news; telling it again' : 'the gateway failed the turn that was told the news, again; giving up');
    if (attempt < TELL_ATTEMPTS) await tellOnce(contextId, text, attempt + 1);
  };
  const tellOnce = async (contextId: string, text: string, attempt: number): Promise<void> => {
    const sent = await gateway.send(contextId, text);
    if (sent) void follow(contextId, text, sent, attempt).catch((err: unknown) => options.log?.warn({ err, contextId }, 'could not follow the gateway\'s turn on the news'));
  };
  const tell = (task: Task, text: string) => tellOnce(`baton-${task.id}`, text, 1);
  return {
    onResult: (task) => tell(task, resultNews(task)),
    onQuestion: (task, asked) => tell(task, questionNews(task, asked)),
  };
}

/** An executor's (or the teller's) entry: the gateway's URL, and the variable holding its peer's token. */
export const OpenClawSpec = z.strictObject({
  /** An OpenClaw gateway's base URL, whose A2A channel is on (channels.a2a). */
  openclaw: z.url(),
  /** The environment variable holding the token of the gateway's A2A peer that stands for Baton. */
  tokenEnv: z.string().min(1),
});
export type OpenClawSpec = z.infer<typeof OpenClawSpec>;

/** The gateway's URL and token named by an entry; a token that is not set stops the daemon at start-up. */
export function gatewayOf(spec: OpenClawSpec, what: string): OpenClawGatewayOptions {
  const token = namedVariable(spec.tokenEnv);
  if (!token) throw new ConfigError(`${what}: ${spec.tokenEnv} is set neither in the environment nor in the project's .env; it holds the token of the A2A peer that stands for Baton on the OpenClaw gateway at ${spec.openclaw}`);
  return { url: spec.openclaw, token };
}

export const openclaw: AgentRuntime<OpenClawSpec> = {
  key: 'openclaw',
  about: '"openclaw" (an OpenClaw gateway\'s URL, with "tokenEnv")',
  spec: OpenClawSpec,
  skills: [
    { ...skillsInHome('openclaw', 'OpenClaw (every agent of the gateway)', { setting: 'OPENCLAW_STATE_DIR', fallback: '~/.openclaw' }),
      help: 'OpenClaw\'s shared skills: $OPENCLAW_STATE_DIR/skills, else ~/.openclaw/skills' },
    { option: '--openclaw-workspace <folder>', runtime: 'OpenClaw (the agent of this workspace)', help: 'one OpenClaw agent\'s workspace: <folder>/skills',
      folder: (workspace) => path.join(path.resolve(String(workspace)), 'skills') },
  ],
  executor: async (spec, setting) => openclawExecutor(gatewayOf(spec, setting.what)),
};
