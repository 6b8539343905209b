/**
 * The agent runtimes a daemon can hand its tasks to, by the key that names each in baton.agent.json.
 * Loaded only when an agent config is read, so that nothing else pays for them.
 */
import { claude } from './claude.js';
import { codex } from './codex.js';
import { codexSession } from './codex-session.js';
import { gemini } from './gemini.js';
import { openclaw } from './openclaw.js';
import type { AgentRuntime } from '../contract.js';

export const runtimes: ReadonlyArray<AgentRuntime<any>> = [openclaw, claude, codex, codexSession, gemini];
