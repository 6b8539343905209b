/** The daemon's options, from code or from a baton.agent.json file (the same names). */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import cron from 'node-cron';
import { z } from 'zod';
import { ConfigError } from '../config.js';
import type { Executor, Executors } from './executors.js';

export const agentDefaults = Object.freeze({
  poll: '*/5 * * * * *',
  heartbeat: '*/30 * * * * *',
  graceSeconds: 30,
  askPollSeconds: 1,
});

const schedule = z.string().refine((expr) => cron.validate(expr), {
  error: 'must be a cron expression, e.g. */5 * * * * * (every 5 s) or */15 * * * * (every 15 min)',
});

const ShellExecutorSpec = z.strictObject({
  command: z.string().min(1),
  timeoutSeconds: z.number().positive().optional(),
  cwd: z.string().optional(),
  env: z.record(z.string(), z.string()).optional(),
});
const ModuleExecutorSpec = z.strictObject({
  /** A JS module whose export is a handler `async (task, ctx) => result`. */
  module: z.string().min(1),
  export: z.string().default('default'),
});

export const AgentFileConfig = z.strictObject({
  displayName: z.string().optional(),
  capabilities: z.array(z.string()).optional(),
  skillsOffered: z.json().optional(),
  maxConcurrent: z.number().int().optional(),
  poll: schedule.optional(),
  heartbeat: schedule.optional(),
  graceSeconds: z.number().nonnegative().optional(),
  sweep: z.boolean().optional(),
  executors: z.record(z.string(), z.union([ShellExecutorSpec, ModuleExecutorSpec])).optional(),
});
export type AgentFileConfig = z.infer<typeof AgentFileConfig>;

/** Reads and checks baton.agent.json; module executors are imported relative to the file. */
export async function loadAgentFile(file: string): Promise<Omit<AgentFileConfig, 'executors'> & { executors?: Executors }> {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`cannot read the agent config ${file}: ${(err as Error).message}`);
  }
  const parsed = AgentFileConfig.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
    throw new ConfigError(`the agent config ${file} is invalid: ${problems}`);
  }
  const { executors: specs, ...rest } = parsed.data;
  const executors: Executors = {};
  for (const [name, spec] of Object.entries(specs ?? {})) {
    if ('command' in spec) {
      executors[name] = { ...spec, cwd: spec.cwd ? path.resolve(path.dirname(file), spec.cwd) : path.dirname(path.resolve(file)) };
      continue;
    }
    const url = pathToFileURL(path.resolve(path.dirname(file), spec.module)).href;
    const handler = (await import(url) as Record<string, unknown>)[spec.export];
    if (typeof handler !== 'function') {
      throw new ConfigError(`executor "${name}": ${spec.module} has no function export "${spec.export}"`);
    }
    executors[name] = handler as Executor;
  }
  return { ...rest, executors };
}

export function checkSchedule(expr: string, what: string): string {
  if (!cron.validate(expr)) throw new ConfigError(`the ${what} schedule "${expr}" is not a cron expression (e.g. */5 * * * * *)`);
  return expr;
}
