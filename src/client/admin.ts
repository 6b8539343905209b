/** The operator's client (service-role key): registers agents and issues or revokes their tokens. */
import type { Json } from '../database.types.js';
import type { BatonDb } from './connection.js';
import { z } from 'zod';
import { refusalOf } from '../errors.js';
import { Agent, DeadLetter, HandoffInput, QueueRow, RecurringHandoff, SweepReport, Task } from '../schemas.js';
import { lazy } from '../on-demand.js';
import { mintAgentToken, type SigningKey, type TokenSigner } from '../tokens.js';
import { asJson, connect, unwrap, unwrapOne } from './connection.js';

export interface AdminClientOptions {
  url: string;
  /** The project's secret key (sb_secret_…), or its legacy service-role key. */
  secretKey?: string;
  /** @deprecated the legacy name of secretKey; either works. */
  serviceRoleKey?: string;
  /** The ES256 signing key imported into the project: agent tokens are signed with it, with its kid. */
  signingKey?: SigningKey;
  /** The project's legacy JWT secret: signs agent tokens (HS256) when there is no signing key. */
  jwtSecret?: string;
}

/** A recurring hand-off: `template` is handed off as `from` at every slot of the cron `schedule` (UTC). */
export interface NewSchedule {
  name: string;
  /** Five-field cron syntax in UTC, e.g. "0 6 * * *". */
  schedule: string;
  /** The agent each task is sent as. */
  from: string;
  /** The agent it is addressed to; leave out to offer it to whoever holds `capabilities`. */
  to?: string;
  capabilities?: string[];
  template: Pick<HandoffInput, 'title' | 'description' | 'payload' | 'priority' | 'expectedOutputs' | 'maxAttempts' | 'leaseSeconds'>;
  enabled?: boolean;
}

export interface NewAgent {
  id: string;
  displayName?: string;
  capabilities?: string[];
  skillsOffered?: unknown;
  maxConcurrent?: number;
  /** How often the agent wakes, in seconds (its claims survive two missed wake-ups). */
  pollIntervalSeconds?: number;
  tokenExpiresAt?: Date;
}

const Registered = lazy(() => z.array(z.object({ agent_id: z.string(), token_id: z.uuid() })).length(1));
const RecurringHandoffs = lazy(() => z.array(RecurringHandoff));
const Ids = lazy(() => z.array(z.object({ id: z.uuid() })));
const DeadLetters = lazy(() => z.array(DeadLetter));
const Agents = lazy(() => z.array(Agent));

/** Pauses or resumes a recurring hand-off, as whoever `db` acts for (the database decides who may). */
export async function setScheduleEnabled(db: BatonDb, name: string, enabled: boolean): Promise<RecurringHandoff | null> {
  const changed = await unwrap(db.from('recurring_handoffs').update({ enabled }).eq('name', name).select('*'), RecurringHandoffs);
  return changed[0] ?? null;
}

/** Open tasks by status and required capability (task_queue), as whoever `db` acts for sees them: all for the operator. */
export async function readQueue(db: BatonDb, signal?: AbortSignal): Promise<QueueRow[]> {
  let query = db.from('task_queue').select('*').order('status').order('capability');
  if (signal) query = query.abortSignal(signal);
  return unwrap(query, z.array(QueueRow));
}

/** Removes a recurring hand-off, as whoever `db` acts for; the tasks it made stay. */
export async function removeSchedule(db: BatonDb, name: string): Promise<boolean> {
  const removed = await unwrap(db.from('recurring_handoffs').delete().eq('name', name).select('id'), Ids);
  return removed.length > 0;
}

export function createAdminClient(options: AdminClientOptions): AdminClient {
  return new AdminClient(options);
}

export class AdminClient {
  readonly db: BatonDb;
  private readonly signer?: TokenSigner;

  constructor({ url, secretKey, serviceRoleKey, signingKey, jwtSecret }: AdminClientOptions) {
    const apiKey = secretKey ?? serviceRoleKey;
    if (!apiKey) throw new Error('createAdminClient needs the project\'s secretKey (or legacy serviceRoleKey)');
    this.db = connect({ url, apiKey });
    this.signer = signingKey ? { signingKey } : jwtSecret ? { jwtSecret } : undefined;
  }

  /** Registers an agent and returns it with its first access token. */
  async createAgent(agent: NewAgent): Promise<{ agent: Agent; token: string }> {
    const secret = this.secret();
    const [registered] = await unwrap(this.db.rpc('register_agent', {
      p_id: agent.id,
      p_display_name: agent.displayName ?? undefined,
      p_capabilities: agent.capabilities ?? [],
      p_skills_offered: asJson(agent.skillsOffered ?? []),
      p_max_concurrent: agent.maxConcurrent ?? undefined,
      p_token_expires_at: agent.tokenExpiresAt?.toISOString() ?? undefined,
    }), Registered);
    const token = await mintAgentToken(secret, {
      agentId: registered!.agent_id, tokenId: registered!.token_id, expiresAt: agent.tokenExpiresAt,
    });
    if (agent.pollIntervalSeconds !== undefined) {
      await unwrap(this.db.from('agents').update({ poll_interval: `${agent.pollIntervalSeconds} seconds` }).eq('id', agent.id), z.null());
    }
    return { agent: await this.getAgent(agent.id), token };
  }

  /** Issues another token for an existing agent; earlier tokens keep working until revoked. */
  async issueToken(agentId: string, expiresAt?: Date): Promise<string> {
    const secret = this.secret();
    const tokenId = await unwrap(
      this.db.rpc('issue_agent_token', { p_agent_id: agentId, p_expires_at: expiresAt?.toISOString() ?? undefined }),
      z.uuid(),
    );
    return mintAgentToken(secret, { agentId, tokenId, expiresAt });
  }

  /** Revokes every token of the agent at once; returns how many were still live. */
  async revokeAgent(agentId: string): Promise<number> {
    return unwrap(this.db.rpc('revoke_agent_tokens', { p_agent_id: agentId }), z.number().int());
  }

  /** The same sweep every daemon runs, for system cron or pg_cron. */
  async sweep(): Promise<SweepReport> {
    return unwrap(this.db.rpc('sweep_tasks'), SweepReport);
  }

  /** Defines a recurring hand-off; the sweep makes its tasks, one per slot. */
  async createSchedule(schedule: NewSchedule): Promise<RecurringHandoff> {
    const t = schedule.template;
    return unwrap(this.db.from('recurring_handoffs').insert({
      name: schedule.name, schedule: schedule.schedule, from_agent: schedule.from, to_agent: schedule.to ?? null,
      required_capabilities: schedule.capabilities ?? [], enabled: schedule.enabled ?? true,
      // next_run_at is set from the schedule by the database.
      next_run_at: new Date().toISOString(),
      template: asJson({
        title: t.title, description: t.description, payload: t.payload, priority: t.priority,
        expected_outputs: t.expectedOutputs, max_attempts: t.maxAttempts, lease_seconds: t.leaseSeconds,
      }) as Record<string, Json>,
    }).select('*').single(), RecurringHandoff);
  }

  async listSchedules(): Promise<RecurringHandoff[]> {
    return unwrap(this.db.from('recurring_handoffs').select('*').order('name'), RecurringHandoffs);
  }

  /** Removes a recurring hand-off by name; the tasks it made stay. Returns whether there was one. */
  async removeSchedule(name: string): Promise<boolean> {
    return removeSchedule(this.db, name);
  }

  /**
   * Pauses (enabled false) or resumes a recurring hand-off by name. A resumed one whose slot passed while
   * it was paused fires once at the next sweep, then keeps its schedule (missed slots are not caught up).
   * Returns it, or null where there is none by that name.
   */
  async setScheduleEnabled(name: string, enabled: boolean): Promise<RecurringHandoff | null> {
    return setScheduleEnabled(this.db, name, enabled);
  }

  /** Failed tasks, newest first: why, who held them last, and whether they were retried. */
  async deadLetters({ limit = 100 }: { limit?: number } = {}): Promise<DeadLetter[]> {
    return unwrap(this.db.from('dead_letters').select('*').order('failed_at', { ascending: false }).limit(limit), DeadLetters);
  }

  /** A new attempt at a failed task, sent as its original sender and linked by retry_of. */
  async retry(taskId: string): Promise<Task> {
    return unwrap(this.db.rpc('retry_task', { p_task_id: taskId }).single(), Task);
  }

  async listAgents(): Promise<Agent[]> {
    return unwrap(this.db.from('agents').select('*').order('id'), Agents);
  }

  async getAgent(agentId: string): Promise<Agent> {
    return unwrapOne(this.db.from('agents').select('*').eq('id', agentId).maybeSingle(), Agent, {
      message: `no agent named "${agentId}"`,
      hint: 'List agents with: baton agent list.',
    });
  }

  private secret(): TokenSigner {
    if (!this.signer) {
      throw refusalOf('BT006', {
                message: 'signing agent tokens needs the project\'s signing key (or its legacy JWT secret)',
        hint: 'Set BATON_SIGNING_KEY to the private JWK imported into the project (baton keys generate), or SUPABASE_JWT_SECRET on a legacy project; baton stack env prints both for the local stack.',
      });
    }
    return this.signer;
  }
}
