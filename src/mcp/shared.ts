/**
 * What the MCP server's tools and resources share: the agent they act as (with the claim tokens it
 * keeps out of the model's sight), and how results, refusals and artifacts look to a model.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { noClaim, type BatonClient } from '../client/agent.js';
import { BatonError, isFault } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Task } from '../schemas.js';
import { shortId } from '../text/render.js';

export const taskRef = z.string().min(1).describe('The task: its full id, or at least its first 6 characters.');
export const reason = z.string().min(1);

/** A task as the model sees it: everything but the claim token, which the server keeps. */
export function forModel(task: Task): Omit<Task, 'claim_token'> {
  const { claim_token: _token, ...rest } = task;
  return rest;
}

export const taskLine = (t: Task) => `${shortId(t.id)} ${t.status}: ${t.title}${t.claimed_by ? ` (held by ${t.claimed_by})` : ''}`;

/** A successful tool result: structured content for programs, a short text for the model. */
export function ok(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/** A refusal as a tool error the model can act on: the code, the message and the hint. */
export function refusal(err: unknown): CallToolResult {
  const error = err instanceof BatonError
    ? { code: err.code, message: err.message, hint: err.hint }
    : isFault(err)
      ? { code: 'FAULT', message: `a fault in baton mcp (${err.name}: ${err.message})`, hint: 'Not your input: the server logged it with its stack. Report it with that log at Baton\'s issue tracker.' }
      : { code: 'ERROR', message: (err as Error).message ?? String(err), hint: null };
  const text = `${error.code}: ${error.message}${error.hint ? `\nHint: ${error.hint}` : ''}`;
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { error } };
}

/**
 * Logs what a tool call ended with, as what it is: Baton's refusals are answers (debug), a fault in
 * Baton's code is an error with its stack, anything else (the machine saying no) a warning.
 */
export function logRefusal(log: Logger, err: unknown, fields: Record<string, unknown>): void {
  if (err instanceof BatonError) log.debug({ err, ...fields }, 'tool refused');
  else if (isFault(err)) log.error({ err, ...fields }, 'a fault in Baton\'s code ended a tool call');
  else log.warn({ err, ...fields }, 'tool failed');
}

/** The artifact forms a model can give: inline text, base64 bytes, or a file on the server's machine. */
export const ArtifactGiven = z.object({
  name: z.string().min(1).describe('The artifact\'s name, e.g. report.md; an expected output is matched by name.'),
  text: z.string().optional().describe('The content as text (JSON as text for JSON outputs).'),
  base64: z.string().optional().describe('The content as base64, for binary files.'),
  path: z.string().optional().describe('A file on the machine this server runs on, read as the content.'),
  media_type: z.string().optional().describe('The media type, e.g. application/json; guessed from the name when left out.'),
}).describe('Exactly one of text, base64 or path.');


/** The agent the server acts as: its client, and the claim tokens of the tasks it holds. */
export class McpAgent {
  private readonly claims = new Map<string, string>();
  /** Answers a host gave that Baton refused, by task: said in the task's MCP status message, in either era. */
  readonly refusedAnswers = new Map<string, string>();

  constructor(readonly client: BatonClient, readonly log: Logger, readonly allowPaths: boolean) {}

  /** A task id from an id or a prefix, as the model gives it. */
  resolve = (ref: string): Promise<string> => this.client.resolveTaskId(ref);

  /** Keeps the claim tokens of the tasks among these that this agent holds. */
  remember(tasks: Task[]): void {
    for (const t of tasks) if (t.claim_token && t.claimed_by === this.client.agentId) this.claims.set(t.id, t.claim_token);
  }

  forget(id: string): void {
    this.claims.delete(id);
  }

  /**
   * The claim token of a task this agent holds: remembered from its claim, or read from the task
   * (which only its holder sees) for a claim made in an earlier session.
   */
  async claimTokenOf(id: string): Promise<string> {
    const known = this.claims.get(id);
    if (known) return known;
    const task = await this.client.getTask(id);
    this.remember([task]);
    // Not held: the database refuses with the reason (BT0xx), which is what the model should see.
    return task.claim_token ?? noClaim;
  }

  /** A task with its history, thread and artifacts, as show_task and baton://task/{id} give it. */
  async showTask(id: string) {
    const client = this.client;
    const [task, history, thread, artifacts] = await Promise.all([
      client.getTask(id), client.events(id), client.messages({ taskId: id, limit: 200 }), client.artifacts(id),
    ]);
    this.remember([task]);
    // What it waited for, with their results: a join's executor works from them.
    const dependencies = task.depends_on.length ? (await client.dependencies(id)).map(forModel) : [];
    return { task: forModel(task), history, thread: [...thread].reverse(), artifacts, dependencies };
  }
}

/** The bytes of an artifact the model gave: text, base64 or a file on this machine. */
export function readGiven(given: z.infer<typeof ArtifactGiven>, allowPaths: boolean): Buffer {
  const forms = [given.text, given.base64, given.path].filter((v) => v !== undefined).length;
  if (forms !== 1) {
    throw new BatonError({ code: 'INVALID_ARTIFACT', message: `artifact "${given.name}" needs exactly one of text, base64 or path (got ${forms})`, hint: 'Give the content inline as text (or base64 for binary), or a path on the server\'s machine.' });
  }
  if (given.text !== undefined) return Buffer.from(given.text, 'utf8');
  if (given.base64 !== undefined) return Buffer.from(given.base64, 'base64');
  if (!allowPaths) {
    throw new BatonError({ code: 'INVALID_ARTIFACT', message: 'this server does not read artifacts from paths', hint: 'Give the content inline as text or base64.' });
  }
  const file = path.resolve(given.path!);
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    throw new BatonError({ code: 'INVALID_ARTIFACT', message: `artifact "${given.name}": no file at ${file}`, hint: 'Give a path that exists on the machine the MCP server runs on, or the content inline.' });
  }
  return fs.readFileSync(file);
}

/** Whether content reads as text: a textual media type, or bytes that are valid UTF-8 without NULs. */
export function isTextual(mediaType: string, content: Buffer): boolean {
  if (/^text\/|json|xml|yaml|csv|javascript|markdown/.test(mediaType)) return true;
  return !content.includes(0) && Buffer.from(content.toString('utf8'), 'utf8').equals(content);
}

