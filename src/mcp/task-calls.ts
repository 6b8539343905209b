/**
 * Task-augmented tool calls as the MCP specification asks, where the SDK's server falls short:
 *
 * - a tool whose taskSupport is forbidden, called as a task, is refused with -32601 before it acts
 *   (the SDK ran it, then failed its answer as an invalid task result: a host that retried sent a
 *   message twice);
 * - a refusal while creating the task (BT011: the agent is offline) is a JSON-RPC error that says
 *   Baton's code and hint (-32602, with `data: {code, hint}`), not a schema dump of the invalid result;
 * - tasks/get, tasks/result and tasks/cancel with a taskId that is not a string are -32602, not -32603.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

type Handler = (request: { method: string; params?: Record<string, unknown> }, extra: unknown) => Promise<unknown>;
interface Internals {
  server: { _requestHandlers: Map<string, Handler> };
  _registeredTools: Record<string, { execution?: { taskSupport?: string } }>;
}

/** Refusals met while creating a task, by the request's id: what the task-augmented call answers with. */
const refusals = new Map<string | number, { text: string; error: { code: string; message: string; hint: string | null } }>();

/** Keeps a refusal met while creating a task, for the call's answer (createTask's catch). */
export function refusedTask(requestId: string | number, refusal: { text: string; error: { code: string; message: string; hint: string | null } }): void {
  refusals.set(requestId, refusal);
}

export function guardTaskCalls(server: McpServer): void {
  const internals = server as unknown as Internals;
  const handlers = internals.server._requestHandlers;
  const call = handlers.get('tools/call');
  if (call) {
    handlers.set('tools/call', async (request, extra) => {
      const name = String(request.params?.name ?? '');
      const asTask = Boolean(request.params?.task);
      const tool = internals._registeredTools[name];
      if (asTask && tool && (tool.execution?.taskSupport ?? 'forbidden') === 'forbidden') {
        throw new McpError(ErrorCode.MethodNotFound, `the tool ${name} cannot be called as a task: call it without "task" (only the tools whose execution.taskSupport is "optional" can)`);
      }
      const id = (extra as { requestId: string | number }).requestId;
      try {
        return await call(request, extra);
      } catch (err) {
        // The SDK made the refusal a tool error, and then refused that as a task's answer.
        const refused = refusals.get(id);
        if (asTask && refused) throw new McpError(ErrorCode.InvalidParams, refused.text, refused.error);
        throw err;
      } finally {
        refusals.delete(id);
      }
    });
  }
  for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
    const handler = handlers.get(method);
    if (!handler) continue;
    handlers.set(method, async (request, extra) => {
      const taskId = request.params?.taskId;
      if (typeof taskId !== 'string' || !taskId) throw new McpError(ErrorCode.InvalidParams, `${method} needs params.taskId, the task's id as a string (given: ${JSON.stringify(taskId ?? null)})`);
      return handler(request, extra);
    });
  }
}
