/**
 * The one shape the daemon knows for an agent runtime: what does a task's work besides a shell command or
 * a JS module (OpenClaw, Claude Code, Codex, Gemini CLI). Each runtime stands in one file of this folder
 * and exports one of these; index.ts lists them. In baton.agent.json a runtime's executor is an object
 * keyed by the runtime's name, e.g. `{"claude": {"model": "claude-sonnet-4-5"}}` or
 * `{"openclaw": "http://127.0.0.1:18789", "tokenEnv": "…"}`.
 *
 * To add a runtime: write its file (its options as a zod schema, and `executor` returning a handler that
 * runs a task and reports with ctx), add it to index.ts, and give it a test against the real program.
 */
import type { z } from 'zod';
import type { Handler } from '../agent/executors.js';
import type { Logger } from '../logger.js';

export interface RuntimeSetting {
  /** The agent config file, for paths relative to it. */
  file: string;
  /** Which executor this is, for messages (e.g. `executor "code"`). */
  what: string;
  log?: Pick<Logger, 'warn' | 'info'>;
}

export interface AgentRuntime<Spec = unknown> {
  /** The key that names the runtime in an executor's entry. */
  key: string;
  /** One line for the message that lists the kinds of executor. */
  about: string;
  /** The executor's entry, whole (with its key): checked when the config is read. */
  spec: z.ZodType<Spec>;
  /**
   * The handler that runs tasks, made once when the daemon starts: anything it needs that is missing
   * (a program not installed, a token not set) is a ConfigError here, so that start-up is all or nothing.
   */
  executor(spec: Spec, setting: RuntimeSetting): Promise<Handler>;
}
