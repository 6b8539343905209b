/** The client an agent uses: every call acts as the agent whose token it holds. */
import type { SupabaseClient } from '@supabase/supabase-js';
import { decodeJwt } from 'jose';
import { z } from 'zod';
import { UnauthorizedError } from '../errors.js';
import {
  Agent, AgentProfile, ClaimNextOptions, ClaimOptions, HandoffInput, Message, MessageInput, Task, TaskEvent,
  TaskId, TaskStatus, type JsonObject,
} from '../schemas.js';
import { connect, parseInput, unwrap, unwrapOne } from './connection.js';

export interface AgentClientOptions {
  url: string;
  anonKey: string;
  /** The agent's access token, as printed by `baton agent create`. */
  token: string;
}

export type TaskBox = 'mine' | 'sent' | 'pending' | 'all';

export interface TaskFilter {
  /** mine: addressed to or held by me; sent: sent by me; pending: claimable by me; all: everything I can see. */
  box?: TaskBox;
  status?: TaskStatus[];
  limit?: number;
}

const Tasks = z.array(Task);

export function createBatonClient(options: AgentClientOptions): BatonClient {
  return new BatonClient(options);
}

export class BatonClient {
  readonly agentId: string;
  readonly db: SupabaseClient;

  constructor({ url, anonKey, token }: AgentClientOptions) {
    this.agentId = agentIdOf(token);
    this.db = connect({ url, apiKey: anonKey, accessToken: token });
  }

  async handoff(input: HandoffInput): Promise<Task> {
    const task = parseInput(HandoffInput, input);
    return unwrap(this.db.rpc('handoff_task', {
      p_title: task.title,
      p_to_agent: task.to ?? null,
      p_description: task.description ?? null,
      p_priority: task.priority ?? 'medium',
      p_payload: task.payload ?? {},
      p_required_capabilities: task.requiredCapabilities ?? [],
      p_deadline: task.deadline instanceof Date ? task.deadline.toISOString() : (task.deadline ?? null),
      p_max_attempts: task.maxAttempts ?? 3,
      p_parent_task_id: task.parentTaskId ?? null,
      p_idempotency_key: task.idempotencyKey ?? null,
    }), Task);
  }

  /** Offers a task to every agent holding all of `requiredCapabilities`. */
  async broadcast(input: Omit<HandoffInput, 'to'>): Promise<Task> {
    return this.handoff({ ...input, to: null });
  }

  async claim(taskId: string, options: ClaimOptions = {}): Promise<Task> {
    const { leaseSeconds, start } = parseInput(ClaimOptions, options);
    return unwrap(this.db.rpc('claim_task', {
      p_task_id: parseInput(TaskId, taskId),
      p_lease_seconds: leaseSeconds ?? null,
      p_start: start ?? false,
    }), Task);
  }

  /** Claims up to `limit` tasks: addressed ones first, then broadcasts, by priority then age. */
  async claimNext(options: ClaimNextOptions = {}): Promise<Task[]> {
    const { limit, capabilities, leaseSeconds, start } = parseInput(ClaimNextOptions, options);
    return unwrap(this.db.rpc('claim_next_tasks', {
      p_limit: limit ?? 1,
      p_capabilities: capabilities?.length ? capabilities : null,
      p_lease_seconds: leaseSeconds ?? null,
      p_start: start ?? false,
    }), Tasks);
  }

  async start(taskId: string, claimToken: string): Promise<Task> {
    return this.holderCall('start_task', taskId, claimToken, {});
  }

  async complete(taskId: string, claimToken: string, result: JsonObject = {}): Promise<Task> {
    return this.holderCall('complete_task', taskId, claimToken, { p_result: result });
  }

  /** Reports failure; with `retry` the task goes back to pending while attempts remain. */
  async fail(taskId: string, claimToken: string, error: string, { retry = false } = {}): Promise<Task> {
    return this.holderCall('fail_task', taskId, claimToken, { p_error: error, p_retry: retry });
  }

  /** Hands a held task back to pending without counting the attempt. */
  async release(taskId: string, claimToken: string, reason?: string): Promise<Task> {
    return this.holderCall('release_task', taskId, claimToken, { p_reason: reason ?? null });
  }

  async reject(taskId: string, reason: string): Promise<Task> {
    return unwrap(this.db.rpc('reject_task', { p_task_id: parseInput(TaskId, taskId), p_reason: reason }), Task);
  }

  async cancel(taskId: string, reason?: string): Promise<Task> {
    return unwrap(this.db.rpc('cancel_task', { p_task_id: parseInput(TaskId, taskId), p_reason: reason ?? null }), Task);
  }

  async getTask(taskId: string): Promise<Task> {
    return unwrapOne(this.db.from('task_handoffs').select('*').eq('id', parseInput(TaskId, taskId)).maybeSingle(), Task, {
      message: `no task ${taskId} that agent "${this.agentId}" can see`,
      hint: 'Check the id: baton tasks --all lists the tasks you can see.',
    });
  }

  /** Tasks the agent can see, highest priority first, then oldest. */
  async listTasks({ box = 'mine', status, limit = 50 }: TaskFilter = {}): Promise<Task[]> {
    const me = this.agentId;
    let query = this.db.from('task_handoffs').select('*');
    if (box === 'mine') query = query.or(`to_agent.eq.${me},claimed_by.eq.${me}`);
    if (box === 'sent') query = query.eq('from_agent', me);
    if (box === 'pending') query = query.eq('status', 'pending').or(`to_agent.eq.${me},to_agent.is.null`);
    if (status?.length) query = query.in('status', status);
    return unwrap(
      query.order('priority', { ascending: false }).order('created_at', { ascending: true }).limit(limit),
      Tasks,
    );
  }

  /** The task's history, oldest first. */
  async events(taskId: string): Promise<TaskEvent[]> {
    return unwrap(
      this.db.from('task_events').select('*').eq('task_id', parseInput(TaskId, taskId)).order('id'),
      z.array(TaskEvent),
    );
  }

  async send(input: MessageInput): Promise<Message> {
    const message = parseInput(MessageInput, input);
    return unwrap(this.db.from('agent_messages').insert({
      from_agent: this.agentId,
      to_agent: message.to ?? null,
      body: message.body,
      kind: message.kind ?? 'note',
      task_id: message.taskId ?? null,
      reply_to_id: message.replyToId ?? null,
    }).select('*').single(), Message);
  }

  /** Messages to, from or for everyone, newest first. */
  async messages({ unread = false, taskId, limit = 50 }: { unread?: boolean; taskId?: string; limit?: number } = {}): Promise<Message[]> {
    let query = this.db.from('agent_messages').select('*');
    if (unread) query = query.eq('to_agent', this.agentId).is('read_at', null);
    if (taskId) query = query.eq('task_id', parseInput(TaskId, taskId));
    return unwrap(query.order('created_at', { ascending: false }).limit(limit), z.array(Message));
  }

  async markRead(messageIds: string[]): Promise<Message[]> {
    return unwrap(
      this.db.from('agent_messages').update({ read_at: new Date().toISOString() })
        .in('id', messageIds).eq('to_agent', this.agentId).select('*'),
      z.array(Message),
    );
  }

  async heartbeat(statusMessage?: string, { active = true } = {}): Promise<Agent> {
    return unwrap(this.db.rpc('send_heartbeat', { p_status_message: statusMessage ?? null, p_active: active }), Agent);
  }

  async agent(agentId: string): Promise<Agent> {
    return unwrapOne(this.db.from('agents').select('*').eq('id', agentId).maybeSingle(), Agent, {
      message: `no agent named "${agentId}"`,
      hint: 'See who is registered: baton discover --all.',
    });
  }

  async agents(): Promise<Agent[]> {
    return unwrap(this.db.from('agents').select('*').order('id'), z.array(Agent));
  }

  async updateProfile(profile: AgentProfile): Promise<Agent> {
    const p = parseInput(AgentProfile, profile);
    const changes = Object.fromEntries(Object.entries({
      display_name: p.displayName,
      capabilities: p.capabilities,
      skills_offered: p.skillsOffered,
      comms_endpoint: p.commsEndpoint,
      max_concurrent: p.maxConcurrent,
    }).filter(([, value]) => value !== undefined));
    return unwrapOne(this.db.from('agents').update(changes).eq('id', this.agentId).select('*').maybeSingle(), Agent, {
      message: `agent "${this.agentId}" is not registered`,
      hint: 'Ask an operator to register it: baton agent create <id>.',
    });
  }

  private async holderCall(fn: string, taskId: string, claimToken: string, args: Record<string, unknown>): Promise<Task> {
    return unwrap(this.db.rpc(fn, {
      p_task_id: parseInput(TaskId, taskId),
      p_claim_token: parseInput(z.uuid({ error: 'a claim token must be a UUID' }), claimToken),
      ...args,
    }), Task);
  }
}

function agentIdOf(token: string): string {
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch {
    throw new UnauthorizedError({
      code: 'BT006',
      message: 'the agent token is not a JWT',
      hint: 'Set BATON_AGENT_TOKEN to the token printed by baton agent create.',
    });
  }
  if (typeof claims.agent_id !== 'string') {
    throw new UnauthorizedError({
      code: 'BT006',
      message: 'the token carries no agent_id claim: it is not an agent token',
      hint: 'Use the token printed by baton agent create, not the anon or service-role key.',
    });
  }
  return claims.agent_id;
}
