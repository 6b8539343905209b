/**
 * The one double in the coding-agent tests: a model server that speaks the three APIs the real CLIs
 * call (Anthropic's Messages, OpenAI's Responses, Google's generateContent), each streamed as its CLI
 * reads it. A script written in the test decides each turn (say something, call a tool, fail with an
 * HTTP status), and every answer reports the usage it "spent", which the server adds up by model so a
 * test can compare it with what Baton recorded.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Api = 'anthropic' | 'openai' | 'gemini';

/** One entry of the conversation as the model sees it, the same shape whichever API carried it. */
export interface Entry {
  role: 'user' | 'assistant' | 'tool';
  text: string;
  /** The tool called (assistant) or answered (tool). */
  tool?: string;
}

export interface Turn {
  api: Api;
  model: string;
  system: string;
  /** The names of the tools offered. */
  tools: string[];
  entries: Entry[];
  /** The last entry: what the model is answering. */
  last: Entry;
  /** All the conversation's text in one string, to find a task id or a marker in. */
  all: string;
}

export type Reply =
  | { text: string }
  | { tool: string; input: Record<string, unknown> }
  | { status: number; error: string };

export interface Usage {
  input: number;
  output: number;
  cached: number;
}

export interface ModelServer {
  url: string;
  /** Every turn the script answered, in order. */
  turns: Turn[];
  /** Usage reported in successful answers, by model. */
  spent: Map<string, Usage>;
  close(): Promise<void>;
}

export type Script = (turn: Turn) => Reply | Promise<Reply>;

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => textOf((c as { text?: unknown; content?: unknown }).text ?? (c as { content?: unknown }).content ?? '')).join('\n');
  return '';
};

function anthropicTurn(body: any): Omit<Turn, 'last' | 'all'> {
  const entries: Entry[] = [];
  for (const m of body.messages ?? []) {
    if (typeof m.content === 'string') { entries.push({ role: m.role === 'assistant' ? 'assistant' : 'user', text: m.content }); continue; }
    for (const part of m.content ?? []) {
      if (part.type === 'text') entries.push({ role: m.role === 'assistant' ? 'assistant' : 'user', text: part.text });
      else if (part.type === 'tool_use') entries.push({ role: 'assistant', text: JSON.stringify(part.input), tool: part.name });
      else if (part.type === 'tool_result') entries.push({ role: 'tool', text: textOf(part.content) });
    }
  }
  return { api: 'anthropic', model: body.model, system: textOf(body.system), tools: (body.tools ?? []).map((t: { name: string }) => t.name), entries };
}

/** Tools offered inside a namespace, by the name the script calls them: the namespace and the tool's own name. */
const namespaces = new Map<string, { namespace: string; name: string }>();
function namespaced(namespace: string, name: string): string {
  const full = `${namespace.replace(/_+$/, '')}__${name}`;
  namespaces.set(full, { namespace, name });
  return full;
}

function openaiTurn(body: any): Omit<Turn, 'last' | 'all'> {
  const entries: Entry[] = [];
  const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input ?? [];
  const developer: string[] = [];
  for (const item of input) {
    if (item.type === 'message' || (!item.type && item.role)) {
      // Instructions given as messages (Codex lists its skills in one) are the system's part.
      if (item.role === 'system' || item.role === 'developer') { developer.push(textOf(item.content)); continue; }
      entries.push({ role: item.role === 'assistant' ? 'assistant' : 'user', text: textOf(item.content) });
    } else if (item.type === 'function_call') entries.push({ role: 'assistant', text: item.arguments, tool: item.namespace ? namespaced(item.namespace, item.name) : item.name });
    else if (item.type === 'function_call_output') entries.push({ role: 'tool', text: typeof item.output === 'string' ? item.output : textOf(item.output?.content ?? item.output) });
  }
  // A namespace of tools (Codex offers an MCP server's tools as `mcp__<server>`) names each as `<namespace>__<tool>`.
  const tools = (body.tools ?? []).flatMap((t: any) => (t.type === 'namespace' || t.tools ? (t.tools ?? []).map((x: any) => namespaced(t.name, x.name)) : [t.name ?? t.type]));
  return { api: 'openai', model: body.model, system: [textOf(body.instructions), ...developer].join('\n'), tools, entries };
}

function geminiTurn(body: any, model: string): Omit<Turn, 'last' | 'all'> {
  const entries: Entry[] = [];
  for (const c of body.contents ?? []) {
    for (const part of c.parts ?? []) {
      if (typeof part.text === 'string') entries.push({ role: c.role === 'model' ? 'assistant' : 'user', text: part.text });
      else if (part.functionCall) entries.push({ role: 'assistant', text: JSON.stringify(part.functionCall.args), tool: part.functionCall.name });
      else if (part.functionResponse) entries.push({ role: 'tool', text: JSON.stringify(part.functionResponse.response), tool: part.functionResponse.name });
    }
  }
  const tools = (body.tools ?? []).flatMap((t: any) => (t.functionDeclarations ?? []).map((f: { name: string }) => f.name));
  return { api: 'gemini', model, system: textOf(body.systemInstruction?.parts ?? []), tools, entries };
}

const sse = (res: http.ServerResponse, events: Array<[string | undefined, unknown]>) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  res.end();
};

function anthropicAnswer(res: http.ServerResponse, model: string, reply: Exclude<Reply, { status: number }>, usage: Usage, stream: boolean) {
  const id = `msg_${crypto.randomBytes(8).toString('hex')}`;
  const block = 'text' in reply
    ? { type: 'text', text: reply.text }
    : { type: 'tool_use', id: `toolu_${crypto.randomBytes(8).toString('hex')}`, name: reply.tool, input: reply.input };
  const stop = 'text' in reply ? 'end_turn' : 'tool_use';
  const usageBody = { input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: usage.cached, cache_creation_input_tokens: 0 };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model, content: [block], stop_reason: stop, stop_sequence: null, usage: usageBody }));
    return;
  }
  sse(res, [
    ['message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usageBody, output_tokens: 1 } } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: 'text' in reply ? { type: 'text', text: '' } : { ...block, input: {} } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: 'text' in reply ? { type: 'text_delta', text: reply.text } : { type: 'input_json_delta', partial_json: JSON.stringify(reply.input) } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

function openaiAnswer(res: http.ServerResponse, model: string, reply: Exclude<Reply, { status: number }>, usage: Usage) {
  const id = `resp_${crypto.randomBytes(8).toString('hex')}`;
  const item = 'text' in reply
    ? { type: 'message', id: `msg_${crypto.randomBytes(8).toString('hex')}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] }
    : { type: 'function_call', id: `fc_${crypto.randomBytes(8).toString('hex')}`, call_id: `call_${crypto.randomBytes(8).toString('hex')}`, ...(namespaces.get(reply.tool) ?? { name: reply.tool }), arguments: JSON.stringify(reply.input), status: 'completed' };
  const response = { id, object: 'response', model, status: 'completed', output: [item] };
  sse(res, [
    ['response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }],
    ['response.output_item.added', { type: 'response.output_item.added', output_index: 0, item }],
    ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
    ['response.completed', {
      type: 'response.completed',
      response: { ...response, usage: { input_tokens: usage.input + usage.cached, input_tokens_details: { cached_tokens: usage.cached }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.cached + usage.output } },
    }],
  ]);
}

function geminiAnswer(res: http.ServerResponse, model: string, reply: Exclude<Reply, { status: number }>, usage: Usage, stream: boolean) {
  const part = 'text' in reply ? { text: reply.text } : { functionCall: { name: reply.tool, args: reply.input } };
  const body = {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: usage.input + usage.cached, candidatesTokenCount: usage.output, cachedContentTokenCount: usage.cached, totalTokenCount: usage.input + usage.cached + usage.output },
    modelVersion: model,
  };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }
  sse(res, [[undefined, body]]);
}

/** What a turn costs: the conversation's length in input, a fixed answer, a tenth of the input cached. */
export function defaultUsage(turn: Turn): Usage {
  const input = 500 + turn.all.length;
  return { input, output: 40, cached: Math.floor(input / 10) };
}

/**
 * Starts the server on a free loopback port. `script` answers the turns of the agents' conversations;
 * the side questions a CLI asks on its own (Gemini's router, a title, a quota check) are answered here.
 */
export async function startModelServer(script: Script, options: { usage?: (turn: Turn) => Usage; log?: (line: string) => void } = {}): Promise<ModelServer> {
  const usageOf = options.usage ?? defaultUsage;
  const turns: Turn[] = [];
  const spent = new Map<string, Usage>();
  const add = (model: string, u: Usage) => {
    const had = spent.get(model) ?? { input: 0, output: 0, cached: 0 };
    spent.set(model, { input: had.input + u.input, output: had.output + u.output, cached: had.cached + u.cached });
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const raw = Buffer.concat(chunks).toString('utf8');
        options.log?.(`${req.method} ${url.pathname}${url.search} ${raw.length} bytes`);
        if (req.method === 'HEAD' || req.method === 'GET') { res.writeHead(200, { 'content-type': 'application/json' }); res.end(req.method === 'GET' ? '{"data":[],"models":[]}' : undefined); return; }
        let body: any = {};
        try { body = raw ? JSON.parse(raw) : {}; } catch { /* not JSON */ }
        const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent)/.exec(url.pathname);
        let base: Omit<Turn, 'last' | 'all'>;
        if (url.pathname.endsWith('/messages/count_tokens')) { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"input_tokens":100}'); return; }
        if (url.pathname.endsWith('/messages')) base = anthropicTurn(body);
        else if (url.pathname.endsWith('/responses')) base = openaiTurn(body);
        else if (gemini) base = geminiTurn(body, gemini[1]!);
        else { res.writeHead(404); res.end(); return; }
        const entries = base.entries.length ? base.entries : [{ role: 'user' as const, text: '' }];
        const turn: Turn = { ...base, entries, last: entries.at(-1)!, all: [base.system, ...entries.map((e) => e.text)].join('\n') };
        // Gemini CLI's router asks which model to use, as JSON, before every turn.
        const routing = turn.api === 'gemini' && gemini?.[2] === 'generateContent' && /model_choice|routing|classif/i.test(turn.all);
        const reply: Reply = routing ? { text: JSON.stringify({ reasoning: 'scripted', model_choice: 'flash', complexity_reasoning: 'scripted', complexity_score: 10 }) } : await script(turn);
        if (!routing) turns.push(turn);
        if ('status' in reply) {
          res.writeHead(reply.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(turn.api === 'gemini' ? { error: { code: reply.status, message: reply.error, status: reply.status === 429 ? 'RESOURCE_EXHAUSTED' : 'INTERNAL' } } : { type: 'error', error: { type: reply.status === 429 ? 'rate_limit_error' : reply.status === 400 ? 'invalid_request_error' : 'api_error', message: reply.error } }));
          return;
        }
        const usage = usageOf(turn);
        add(turn.model, usage);
        if (turn.api === 'anthropic') anthropicAnswer(res, turn.model, reply, usage, body.stream === true);
        else if (turn.api === 'openai') openaiAnswer(res, turn.model, reply, usage);
        else geminiAnswer(res, turn.model, reply, usage, gemini?.[2] === 'streamGenerateContent');
      })().catch((err: unknown) => { res.writeHead(500); res.end(String(err)); });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    turns,
    spent,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
