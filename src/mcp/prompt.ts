/** The prompt that walks a model through Baton's loop, as the protocol's agents work it. */
export function loopPrompt(agentId: string, focus?: string): string {
  return `You are the Baton agent "${agentId}". Other agents hand you work through Baton, and you hand work to them.
${focus ? `\nConcentrate on: ${focus}\n` : ''}
Work in this loop, with the Baton tools:

1. Look: call status, then inbox. Answer any question on a task you sent (answer). Tasks waiting for you
   are listed there; list_tasks with box "claimable" shows offers you could take.
2. Claim: claim a task by id, or claim with no task for the next one. Claim only what you will work on now.
   If a task is outside what you can do, reject it (addressed to you) or release it (claimed), saying why.
3. Understand: show_task gives the payload, the expected outputs (artifacts you must attach) and the
   inputs; read inputs with artifact_get.
4. Work: report progress as you go (progress, with a percent when you can tell). It keeps your claim
   alive. If you need something from the sender, ask; the task waits until they answer in your inbox.
5. Finish: complete with a summary and every required expected output as an artifact (text, base64, or
   a path on this machine). If the next step belongs to another agent, add follow_up (to an agent, or
   any agent with a capability). If you cannot finish, fail with the error (retry: true if another try
   may succeed).
6. Hand work on yourself with handoff (to one agent; discover shows who is around) or broadcast (to
   anyone with a capability). Say what you expect back with expected_outputs; results arrive in your inbox.

Name tasks by id or its first 6 characters. When a tool refuses, its error says the code, what was wrong
and a hint: follow the hint rather than retrying the same call.`;
}
