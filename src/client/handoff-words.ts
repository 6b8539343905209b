/**
 * A hand-off in the words its surfaces take (the CLI's flags, MCP's tool arguments), and the one
 * mapping from those words to the client's request, so that a word means the same at every door:
 * `after` with `afterAny` waits for the first of them, `runAnyway` runs even if one fails, and so on.
 * Each surface resolves its task references (ids or prefixes) before; the rules are the database's.
 */
import type { ArtifactRef, BudgetInput, ExpectedOutput, HandoffInput, JsonObject, TaskPriority } from '../schemas.js';

export interface HandoffWords {
  title: string;
  description?: string;
  payload?: JsonObject;
  priority?: TaskPriority;
  deadline?: string | Date;
  /** Artifacts the receiver must (or may) attach. */
  expected?: ExpectedOutput[];
  /** Artifacts of earlier tasks it works from. */
  inputs?: ArtifactRef[];
  /** The task it is part of (resolved). */
  parent?: string;
  maxAttempts?: number;
  leaseSeconds?: number;
  idempotencyKey?: string;
  /** Tasks it waits for (resolved). */
  after?: string[];
  /** With `after`: the first of them to complete releases it, and the others are cancelled. */
  afterAny?: boolean;
  /** With `after`: it runs even if one of them fails or is cancelled. */
  runAnyway?: boolean;
  /** Not claimable before then. */
  runAt?: string | Date;
  budget?: BudgetInput;
}

/**
 * Handing work to an agent that is offline queues it, at every door: the database's default
 * (`handoff_task`'s `p_allow_offline`), which no surface restates. A caller who wants a refusal instead
 * (BT011) asks for it: `--online-only` on the CLI, `allow_offline: false` in MCP, `allowOffline: false`
 * in the client. Bots that wake every few minutes are offline most of the time; their work waits.
 */
export const ONLINE_ONLY_HINT = 'refuse instead of queueing with --online-only (MCP: allow_offline false)';

/** What a surface says of a task it queued for an agent that is offline now, or nothing if it is online. */
export async function queuedNote(client: { presence(agentId: string): Promise<{ is_online: boolean } | null> }, task: { to_agent: string | null }): Promise<string | undefined> {
  if (!task.to_agent) return undefined;
  const agent = await client.presence(task.to_agent);
  if (!agent || agent.is_online) return undefined;
  return `${task.to_agent} is offline; the task waits until it comes back`;
}

/** The request these words make (the addressee, capabilities and the offline rule are the caller's). */
export function handoffInput(words: HandoffWords): HandoffInput {
  return {
    title: words.title,
    description: words.description,
    payload: words.payload,
    priority: words.priority,
    deadline: words.deadline,
    expectedOutputs: words.expected,
    inputArtifacts: words.inputs,
    parentTaskId: words.parent,
    maxAttempts: words.maxAttempts,
    leaseSeconds: words.leaseSeconds,
    idempotencyKey: words.idempotencyKey,
    dependsOn: words.after,
    dependencyMode: words.afterAny ? 'any' : undefined,
    onDependencyFailure: words.runAnyway ? 'run' : undefined,
    runAt: words.runAt,
    budget: words.budget,
  };
}
