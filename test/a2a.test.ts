/**
 * Baton over A2A, called with the official @a2a-js/sdk client (no hand-made A2A client) against the
 * real stack: the card, a blocking message to an agent run by a daemon, a stream in order, the
 * input-required round trip, cancel, list with paging, and tokens refused.
 */
import crypto from 'node:crypto';
import { Role, TaskState, type Message, type SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, type Client } from '@a2a-js/sdk/client';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2AServer, type A2AServer } from '../src/a2a/server.js';
import { silentLogger } from '../src/logger.js';
import { daemon, eventually } from './daemon-helpers.js';
import { admin, newAgent, stack, type TestAgent } from './helpers.js';
import { agentKey } from './keys-mode.js';

let server: A2AServer;
beforeAll(async () => {
  server = await startA2AServer({ url: stack.SUPABASE_URL, ...agentKey(stack), directory: admin.db, log: silentLogger });
});
afterAll(() => server?.close());

const factory = new ClientFactory();
const as = (token: string) => ({ serviceParameters: { Authorization: `Bearer ${token}` } });
const clientFor = (agentId: string): Promise<Client> => factory.createFromUrl(`${server.url}/agents/${agentId}/`);

function send(text: string, extra: Partial<Message> = {}, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: {
      messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, extensions: [], metadata: {}, referenceTaskIds: [],
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      ...extra,
    },
    configuration: returnImmediately ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } : undefined,
    metadata: {},
  };
}

/** A worker run by a daemon: asks when told to, attaches answer.json, sums the payload's numbers. */
async function worker(): Promise<TestAgent> {
  const agent = await newAgent('a2a-worker', { capabilities: ['math'] });
  await daemon(agent, {
    executors: {
      '*': async (task, ctx) => {
        await ctx.progress('adding', 50);
        let unit = 'none';
        if (task.title.includes('ask')) unit = await ctx.ask('Which unit?');
        const numbers = (task.payload.numbers as number[] | undefined) ?? [];
        await ctx.artifact('answer.json', { json: { sum: numbers.reduce((a, b) => a + b, 0), unit } });
        await ctx.artifact('working.txt', `added ${numbers.length} numbers\n`, { mediaType: 'text/plain' });
        return { status: 'success', summary: `summed in ${unit}` };
      },
    },
  });
  return agent;
}

describe('Baton over A2A, with the official client', () => {
  it('takes a budget from the message\'s metadata, and refuses one it cannot read', async () => {
    const [target, caller] = await Promise.all([newAgent('a2a-budget'), newAgent('a2a-budget-caller')]);
    const client = await clientFor(target.id);
    const made = await client.sendMessage(send('Within budget', { metadata: { budget: { tokens: 5000, onSpent: 'fail' } } }, true), as(caller.token)) as { id: string };
    expect(await caller.client.budget(made.id)).toMatchObject({ tokens_left: 5000, budgets: [expect.objectContaining({ on_spent: 'fail', set_by: caller.id })] });
    await expect(client.sendMessage(send('Bad budget', { metadata: { budget: { tokens: 'lots' } } }, true), as(caller.token)))
      .rejects.toThrow(/metadata\.budget must be/);
  });

  it('publishes a valid card per agent, built from its capabilities', async () => {
    const w = await newAgent('a2a-card', { capabilities: ['math', 'charts'] });
    const client = await clientFor(w.id);
    const card = await client.getAgentCard();
    expect(card.name).toBe(w.id);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.skills.map((s) => s.id)).toEqual(['math', 'charts']);
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${server.url}/agents/${w.id}/`, protocolBinding: 'JSONRPC' });
    expect(Object.keys(card.securitySchemes)).toEqual(['baton']);
  });

  it('hands a message to an agent run by a daemon and answers with the completed task and its artifacts', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-caller')]);
    const client = await clientFor(w.id);
    const request = send('Add these numbers\nPlease be exact.');
    request.message!.parts.push({ content: { $case: 'data', value: { numbers: [1, 2, 3] } }, metadata: undefined, filename: '', mediaType: 'application/json' });
    const answer = await client.sendMessage(request, as(caller.token));
    if (!('status' in answer)) throw new Error('expected a task');
    expect(answer.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = answer.artifacts.find((a) => a.name === 'answer.json')!;
    expect(artifact.parts[0]!.content).toEqual({ $case: 'data', value: { sum: 6, unit: 'none' } });
    expect(artifact.metadata?.sha256).toMatch(/^[0-9a-f]{64}$/);
    // A text file stays a file: raw bytes with its name and media type, not a bare text part.
    const notes = answer.artifacts.find((a) => a.name === 'working.txt')!.parts[0]!;
    expect(notes).toMatchObject({ filename: 'working.txt', mediaType: 'text/plain', content: { $case: 'raw' } });
    expect(Buffer.from(notes.content!.value as Uint8Array).toString()).toBe('added 3 numbers\n');
    const result = answer.artifacts.find((a) => a.name === 'result')!;
    expect(result.parts.map((p) => p.content)).toMatchObject([{ $case: 'text', value: 'summed in none' }, { $case: 'data', value: { status: 'success', summary: 'summed in none' } }]);
    // The hand-off is an ordinary Baton task, sent as the caller (the database's truth, not the message's).
    const task = await caller.client.getTask(answer.id);
    expect(task).toMatchObject({ from_agent: caller.id, to_agent: w.id, title: 'Add these numbers', description: 'Add these numbers\nPlease be exact.', payload: { numbers: [1, 2, 3] } });
  });

  it('streams a task from submitted through working to completed, in order', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-stream')]);
    const client = await clientFor(w.id);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(send('Add nothing'), as(caller.token))) events.push(event);
    const kinds = events.map((e) => e.payload?.$case);
    expect(kinds[0]).toBe('task');
    const states = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.status!.state] : []));
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.indexOf(TaskState.TASK_STATE_WORKING)).toBeLessThan(states.indexOf(TaskState.TASK_STATE_COMPLETED));
    expect(kinds).toContain('artifactUpdate');
    const eventIds = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' && e.payload.value.metadata?.event_id ? [e.payload.value.metadata.event_id as number] : []));
    expect(eventIds).toEqual([...eventIds].sort((a, b) => a - b));
  });

  it('stops following a task once the caller of its stream goes away', async () => {
    const [idle, caller] = await Promise.all([newAgent('a2a-idle-stream'), newAgent('a2a-gone')]);
    const client = await clientFor(idle.id);
    const before = server.following();
    const gone = new AbortController();
    const stream = client.sendMessageStream(send('Nobody will run this'), { ...as(caller.token), signal: gone.signal });
    const first = await stream.next();
    expect(first.value?.payload?.$case).toBe('task');
    // The task stays pending (its agent runs no daemon): the server follows it for as long as the caller listens.
    await eventually(async () => server.following() === before + 1, 10_000, 'the server following the task');
    gone.abort();
    await expect(stream.next()).rejects.toThrow();
    await eventually(async () => server.following() === before, 10_000, 'the server to stop following a task nobody listens for');
  });

  it('resumes a stream from the last event seen, from the history, without losing one; a final task has none', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-resume')]);
    const client = await clientFor(w.id);
    const asked = await client.sendMessage(send('Add and ask'), as(caller.token)) as { id: string; contextId: string };
    const history = await caller.client.events(asked.id);
    expect(history.map((e) => e.to_status)).toEqual(['pending', 'in_progress', 'input_required']);
    // Reconnecting after the first event: the rest come from the history, in order, then what follows, to the end.
    const resumed: StreamResponse[] = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: asked.id }, { serviceParameters: { ...as(caller.token).serviceParameters, 'Last-Event-ID': String(history[0]!.id) } })) resumed.push(event);
    })();
    // Each change of status, with its event id (progress comes as working updates without one).
    const updates = () => resumed.flatMap((e) => (e.payload?.$case === 'statusUpdate' && e.payload.value.metadata?.event_id ? [e.payload.value.metadata.event_id] : []));
    await eventually(async () => updates().length === 2, 20_000, 'the history to be replayed');
    await client.sendMessage(send('metres', { taskId: asked.id, contextId: asked.contextId }), as(caller.token));
    await reading;
    const all = await caller.client.events(asked.id);
    expect(all.at(-1)!.to_status).toBe('completed');
    expect(updates()).toEqual(all.slice(1).map((e) => e.id));
    // The stream ends at the final status: nothing follows it.
    expect(resumed.at(-1)!.payload).toMatchObject({ $case: 'statusUpdate', value: { status: { state: TaskState.TASK_STATE_COMPLETED } } });
    // A task that has ended has nothing to subscribe to (the specification's UnsupportedOperation).
    await expect((async () => {
      for await (const _ of client.resubscribeTask({ tenant: '', id: asked.id }, as(caller.token))) { /* nothing is streamed */ }
    })()).rejects.toThrow(/nothing left to subscribe/);
    const done = asked;
    // The same message sent again (a retry) is the same task.
    const again = await client.sendMessage(send('Add and be done', { messageId: 'fixed-' + done.id }, true), as(caller.token)) as { id: string };
    const twice = await client.sendMessage(send('Add and be done', { messageId: 'fixed-' + done.id }, true), as(caller.token)) as { id: string };
    expect(twice.id).toBe(again.id);
  });

  it('answers over the HTTP+JSON binding too, which the card lists beside JSON-RPC', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-rest')]);
    const rest = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }))
      .createFromUrl(`${server.url}/agents/${w.id}/`);
    const card = await rest.getAgentCard();
    expect(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`)).toEqual(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3']);
    const done = await rest.sendMessage(send('Add over REST'), as(caller.token));
    if (!('status' in done)) throw new Error('expected a task');
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await rest.getTask({ tenant: '', id: done.id }, as(caller.token))).id).toBe(done.id);
    await expect(rest.getTask({ tenant: '', id: done.id })).rejects.toThrow();
  });

  it('shows a question as input-required, and takes the next message on the task as the answer', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-ask')]);
    const client = await clientFor(w.id);
    const asked = await client.sendMessage(send('Add and ask'), as(caller.token));
    if (!('status' in asked)) throw new Error('expected a task');
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'Which unit?' });
    const done = await client.sendMessage(send('metres', { taskId: asked.id, contextId: asked.contextId }), as(caller.token));
    if (!('status' in done)) throw new Error('expected a task');
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts.find((a) => a.name === 'answer.json')!.parts[0]!.content).toEqual({ $case: 'data', value: { sum: 0, unit: 'metres' } });
    expect(done.history.map((m) => m.parts[0]?.content?.value)).toEqual(expect.arrayContaining(['Which unit?', 'metres']));
  });

  it('cancels a task, and says a final one cannot be', async () => {
    const [idle, caller] = await Promise.all([newAgent('a2a-idle'), newAgent('a2a-cancel')]);
    const client = await clientFor(idle.id);
    const submitted = await client.sendMessage(send('Wait forever', {}, true), as(caller.token));
    if (!('status' in submitted)) throw new Error('expected a task');
    expect(submitted.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const cancelled = await client.cancelTask({ tenant: '', id: submitted.id, metadata: {} }, as(caller.token));
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await caller.client.getTask(submitted.id)).status).toBe('cancelled');
    // The database says it (BT001), not a check of A2A's own before it.
    await expect(client.cancelTask({ tenant: '', id: submitted.id, metadata: {} }, as(caller.token))).rejects.toThrow(/is already cancelled; it cannot be cancelled/);
  });

  it('lists the caller\'s own tasks, page by page', async () => {
    const [idle, caller] = await Promise.all([newAgent('a2a-list-to'), newAgent('a2a-list')]);
    const client = await clientFor(idle.id);
    const sent = [];
    for (const title of ['first', 'second', 'third']) {
      const t = await client.sendMessage(send(title, {}, true), as(caller.token));
      sent.push((t as { id: string }).id);
    }
    const page1 = await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: '', statusTimestampAfter: undefined }, as(caller.token));
    expect(page1.tasks.map((t) => t.id)).toEqual([sent[2], sent[1]]);
    expect(page1.totalSize).toBe(3);
    expect(page1.nextPageToken).not.toBe('');
    const page2 = await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: page1.nextPageToken, statusTimestampAfter: undefined }, as(caller.token));
    expect(page2.tasks.map((t) => t.id)).toEqual([sent[0]]);
    expect(page2.nextPageToken).toBe('');
  });

  it('refuses no token and a forged one, and shows a stranger nothing', async () => {
    const [idle, caller, stranger] = await Promise.all([newAgent('a2a-r-to'), newAgent('a2a-r-from'), newAgent('a2a-stranger')]);
    const client = await clientFor(idle.id);
    await expect(client.sendMessage(send('no token'))).rejects.toThrow();
    const forged = await new SignJWT({ role: 'authenticated', agent_id: caller.id, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode('not the project\'s secret'));
    await expect(client.sendMessage(send('forged'), as(forged))).rejects.toThrow(/refused/);
    const mine = await client.sendMessage(send('mine', {}, true), as(caller.token)) as { id: string };
    await expect(client.getTask({ tenant: '', id: mine.id }, as(stranger.token))).rejects.toThrow(/not found|no task/i);
    await expect(client.cancelTask({ tenant: '', id: mine.id, metadata: {} }, as(stranger.token))).rejects.toThrow(/not found|no task/i);
    expect((await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 50, pageToken: '', statusTimestampAfter: undefined }, as(stranger.token))).tasks).toEqual([]);
    await eventually(async () => (await caller.client.getTask(mine.id)).status === 'pending');
  });
});

describe('Baton over A2A, on the wire as the specification says it', () => {
  const rpc = async (agentId: string, body: string, token?: string) => {
    const res = await fetch(`${server.url}/agents/${agentId}/`, {
      method: 'POST', body,
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    return { status: res.status, body: await res.json() as { result?: Record<string, unknown>; error?: { code: number; message: string } } };
  };
  const call = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

  it('sends the card in A2A\'s JSON, cacheable, with its bearer scheme readable by the SDK', async () => {
    const w = await newAgent('a2a-wire-card');
    const res = await fetch(`${server.url}/agents/${w.id}/.well-known/agent-card.json`);
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const card = await res.json() as { securitySchemes: Record<string, unknown> };
    expect(card.securitySchemes).toEqual({ baton: { httpAuthSecurityScheme: expect.objectContaining({ scheme: 'bearer', bearerFormat: 'JWT' }) } });
    expect((await (await clientFor(w.id)).getAgentCard()).securitySchemes.baton?.scheme?.$case).toBe('httpAuthSecurityScheme');
  });

  it('answers an id that names no task with TaskNotFound, whatever its form, and an unknown context with no tasks', async () => {
    const [w, caller] = await Promise.all([newAgent('a2a-wire-to'), newAgent('a2a-wire-from')]);
    for (const id of ['not-a-uuid', crypto.randomUUID()]) {
      for (const method of ['GetTask', 'CancelTask']) {
        const { body } = await rpc(w.id, call(method, { id }), caller.token);
        expect(body.error, `${method} ${id}`).toMatchObject({ code: -32001 });
      }
    }
    const listed = await rpc(w.id, call('ListTasks', { contextId: 'no-such-context' }), caller.token);
    expect(listed.body.result).toMatchObject({ tasks: [] });
    // The request comes back in the history with the id its sender gave it.
    const messageId = crypto.randomUUID();
    const sent = await rpc(w.id, call('SendMessage', { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'Keep my id' }] }, configuration: { returnImmediately: true } }), caller.token);
    const id = (sent.body.result as { task: { id: string } }).task.id;
    const got = await rpc(w.id, call('GetTask', { id, historyLength: 10 }), caller.token);
    expect((got.body.result as { history: Array<{ messageId: string }> }).history[0]!.messageId).toBe(messageId);
  });

  it('refuses no token with 401 and no A2A code, a body that is not JSON with a parse error, and a revoked token at once', async () => {
    const w = await newAgent('a2a-wire-auth');
    const none = await rpc(w.id, call('ListTasks', {}));
    expect(none.status).toBe(401);
    expect(none.body.error!.code).not.toBe(-32001); // TaskNotFound is for tasks
    const garbled = await rpc(w.id, '{"jsonrpc": "2.0", "id": 1, "method": ', (await newAgent('a2a-wire-garbled')).token);
    expect(garbled.body.error!.code).toBe(-32700);
    const revoked = await newAgent('a2a-wire-revoked');
    expect((await rpc(w.id, call('ListTasks', {}), revoked.token)).status).toBe(200);
    await admin.revokeAgent(revoked.id);
    expect((await rpc(w.id, call('ListTasks', {}), revoked.token)).status).toBe(401);
  });

  it('answers a message of files it does not read with ContentTypeNotSupported; HTTP+JSON as application/json, also through a doubled slash', async () => {
    const [w, caller] = await Promise.all([newAgent('a2a-wire-media-to'), newAgent('a2a-wire-media-from')]);
    const params = { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ raw: 'dGNr', mediaType: 'application/x-unknown' }] } };
    const { body } = await rpc(w.id, call('SendMessage', params), caller.token);
    expect(body.error).toMatchObject({ code: -32005 });
    const rest = await fetch(`${server.url}/agents/${w.id}//message:send`, {
      method: 'POST', body: JSON.stringify(params), headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: `Bearer ${caller.token}` },
    });
    expect(rest.status, await rest.clone().text()).toBe(415);
    expect(rest.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('answers HTTP+JSON in the media type its caller speaks: application/a2a+json (1.0.1) or application/json (1.0)', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-wire-type')]);
    const params = { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'what is 2 + 2' }] } };
    const ask = (headers: Record<string, string>) => fetch(`${server.url}/agents/${w.id}/message:send`, {
      method: 'POST', body: JSON.stringify({ ...params, message: { ...params.message, messageId: crypto.randomUUID() } }),
      headers: { 'a2a-version': '1.0', authorization: `Bearer ${caller.token}`, ...headers },
    });
    // Sent as application/a2a+json, as 1.0.1 says a request should be: answered so.
    const a2a = await ask({ 'content-type': 'application/a2a+json' });
    expect(a2a.status, await a2a.clone().text()).toBe(200);
    expect(a2a.headers.get('content-type')).toMatch(/^application\/a2a\+json/);
    // Sent as application/json, accepting it first (a 1.0 caller): answered as application/json.
    const json = await ask({ 'content-type': 'application/json', accept: 'application/json, application/a2a+json' });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    // Accepting application/a2a+json first, as the SDK's 1.0 client does: that type.
    const preferring = await ask({ 'content-type': 'application/json', accept: 'application/a2a+json, application/json' });
    expect(preferring.headers.get('content-type')).toMatch(/^application\/a2a\+json/);
    // An error as well: a task that is not there.
    const missing = await fetch(`${server.url}/agents/${w.id}/tasks/${crypto.randomUUID()}`, { headers: { 'a2a-version': '1.0', accept: 'application/a2a+json', authorization: `Bearer ${caller.token}` } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/a2a\+json/);
  });

  it('serves HTTP+JSON at the root too, where the root card lists it', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-wire-root')]);
    const root = await startA2AServer({ url: stack.SUPABASE_URL, ...agentKey(stack), directory: admin.db, log: silentLogger, defaultAgent: w.id });
    try {
      const rest = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }))
        .createFromUrl(`${root.url}/`);
      expect((await rest.getAgentCard()).supportedInterfaces.map((i) => [i.protocolBinding, i.url])).toEqual([['JSONRPC', `${root.url}/`], ['HTTP+JSON', `${root.url}/`], ['JSONRPC', `${root.url}/`]]);
      const done = await rest.sendMessage(send('Add at the root'), as(caller.token));
      if (!('status' in done)) throw new Error('expected a task');
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect((await rest.getTask({ tenant: '', id: done.id }, as(caller.token))).id).toBe(done.id);
    } finally {
      await root.close();
    }
  });

  it('ends a stream at the final status, with times in UTC written with a Z', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-wire-stream')]);
    const events: StreamResponse[] = [];
    for await (const event of (await clientFor(w.id)).sendMessageStream(send('Add and stream'), as(caller.token))) events.push(event);
    const last = events.at(-1)!.payload;
    expect(last).toMatchObject({ $case: 'statusUpdate', value: { status: { state: TaskState.TASK_STATE_COMPLETED } } });
    const finals = events.filter((e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED);
    expect(finals).toHaveLength(1);
    for (const e of events) if (e.payload?.$case === 'statusUpdate') expect(String(e.payload.value.status?.timestamp)).toMatch(/Z$/);
  });

  it('serves callers of A2A 0.3 (no A2A-Version header): message/send, message/stream, tasks/get and tasks/cancel', async () => {
    const [w, caller] = await Promise.all([worker(), newAgent('a2a-old-caller')]);
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${server.url}/agents/${w.id}/`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${caller.token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: crypto.randomUUID(), method, params }),
      });
      return method === 'message/stream' ? res.text() : (await res.json() as { result?: any; error?: unknown }); // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const message = (text: string) => ({ message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text }] }, configuration: { blocking: true } });
    const sent = await rpc('message/send', message('Add these numbers')) as { result: { kind: string; id: string; status: { state: string } } };
    expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const got = await rpc('tasks/get', { id: sent.result.id }) as { result: { id: string; status: { state: string }; artifacts: Array<{ name: string }> } };
    expect(got.result).toMatchObject({ id: sent.result.id, status: { state: 'completed' } });
    expect(got.result.artifacts.map((a) => a.name)).toContain('answer.json');
    // A stream, as 0.3 events (kind, final), to its end.
    const streamed = await rpc('message/stream', message('Add these numbers again')) as string;
    const events = streamed.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)).result);
    expect(events.at(-1)).toMatchObject({ kind: 'status-update', final: true, status: { state: 'completed' } });
    // Cancelling a finished task is refused as 0.3 says: TaskNotCancelableError, -32002.
    const cancelled = await rpc('tasks/cancel', { id: sent.result.id }) as { error?: { code: number } };
    expect(cancelled.error?.code).toBe(-32002);
  });
});
