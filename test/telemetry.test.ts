/**
 * One trace across a chain of agents, and metrics Prometheus scrapes. Daemons run as separate processes
 * (`baton agent run`), the first hand-off is the CLI's, and the spans go to an OTLP/HTTP receiver in this
 * test: every task's spans share the first hand-off's trace, each task's spans hang under the context it
 * was handed off in, and the wait shows. Without OTEL_* settings nothing is exported. Debian's
 * prometheus (installed by .ci/run) scrapes a daemon's /metrics, and its query API has the count.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatonClient } from '../src/client/agent.js';
import { freePort } from '../src/stack/ports.js';
import { DaemonMetrics } from '../src/telemetry/metrics.js';
import { baton, cliPath } from './cli.js';
import { eventually } from './daemon-helpers.js';
import { admin, newAgent, stack, type TestAgent } from './helpers.js';
import { agentKey, agentKeyEnv } from './keys-mode.js';

interface ReceivedSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; service: string; kind?: number | string;
  attributes: Record<string, unknown>; startTimeUnixNano: string; endTimeUnixNano: string;
}

/** Made in beforeAll and removed in afterAll: a run that filters every test out leaves nothing behind. */
let work = '';
const children: ChildProcess[] = [];
const spans: ReceivedSpan[] = [];
/** Each export request the receiver got: whose spans, and how many. */
const exports: Array<{ services: string[]; count: number }> = [];
let receiver: http.Server;
let otlp = '';

/**
 * Just enough of OTLP's trace request (opentelemetry-proto, collector/trace/v1 and trace/v1) to read in
 * protobuf what the receiver reads in JSON.
 */
const protobufRequest = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 }, spanId: { type: 'bytes', id: 2 }, parentSpanId: { type: 'bytes', id: 4 }, name: { type: 'string', id: 5 },
        startTimeUnixNano: { type: 'fixed64', id: 7 }, endTimeUnixNano: { type: 'fixed64', id: 8 }, attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
      },
    },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: { oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue'] } }, fields: { stringValue: { type: 'string', id: 1 }, boolValue: { type: 'bool', id: 2 }, intValue: { type: 'int64', id: 3 }, doubleValue: { type: 'double', id: 4 } } },
  },
}).lookupType('ExportTraceServiceRequest');

/** A protobuf request as the JSON one reads: ids in lowercase hex, times as decimal strings. */
function fromProtobuf(body: Buffer): unknown {
  const doc = protobufRequest.toObject(protobufRequest.decode(body), { bytes: String, longs: String }) as ReceivedDoc;
  const hex = (base64?: string) => (base64 ? Buffer.from(base64, 'base64').toString('hex') : undefined);
  for (const rs of doc.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) Object.assign(span, { traceId: hex(span.traceId), spanId: hex(span.spanId), parentSpanId: hex(span.parentSpanId) });
    }
  }
  return doc;
}

type ReceivedDoc = { resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<Omit<ReceivedSpan, 'attributes' | 'service'> & { attributes: Array<{ key: string; value: Record<string, unknown> }> }> }> }> };
/** The content type of each export request the receiver got. */
const encodings: string[] = [];

/** OTLP/HTTP, in JSON or protobuf, as @opentelemetry/exporter-trace-otlp-http and -proto send it. */
beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-telemetry-'));
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => { chunks.push(c); });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = req.headers['content-type'] ?? '';
      encodings.push(type);
      const doc = (type.includes('protobuf') ? fromProtobuf(body) : JSON.parse(body.toString('utf8'))) as ReceivedDoc;
      for (const rs of doc.resourceSpans ?? []) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ ...s, service, attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])) });
          }
        }
      }
      exports.push({ services: (doc.resourceSpans ?? []).map((rs) => rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? ''), count: (doc.resourceSpans ?? []).reduce((n, rs) => n + (rs.scopeSpans ?? []).reduce((m, ss) => m + (ss.spans ?? []).length, 0), 0) });
      res.writeHead(200, { 'content-type': type.includes('protobuf') ? 'application/x-protobuf' : 'application/json' }).end(type.includes('protobuf') ? Buffer.alloc(0) : '{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  otlp = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const tracingEnv = (service: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: service });
const noTracing = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_TRACES_EXPORTER: '' };

/** `baton agent run` for `agent` with a module executor, as its own process group. */
function runDaemon(agent: TestAgent, executor: string, env: Record<string, string>, extra: Record<string, unknown> = {}) {
  const module = path.join(work, `${agent.id}.mjs`);
  fs.writeFileSync(module, executor);
  const config = path.join(work, `${agent.id}.json`);
  fs.writeFileSync(config, JSON.stringify({ poll: '* * * * * *', heartbeat: '*/2 * * * * *', executors: { '*': { module } }, ...extra }));
  let output = '';
  const child = spawn(process.execPath, [cliPath, 'agent', 'run', '--config', config], {
    detached: true,
    env: { ...process.env, ...noTracing, SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'info', ...env },
  });
  child.stdout!.on('data', (c: Buffer) => { output += c; });
  child.stderr!.on('data', (c: Buffer) => { output += c; });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => output, stop: async () => { process.kill(child.pid!, 'SIGTERM'); return exited; } };
}

/** A chain of three: a → (a hand-off in its executor) b → (a follow-up in its result) c. */
async function chain(env: (service: string) => Record<string, string>) {
  const [lead, a, b, c] = await Promise.all([newAgent('lead'), newAgent('chain-a'), newAgent('chain-b'), newAgent('chain-c')]);
  const daemons = [
    runDaemon(a, `export default async (task, ctx) => { await ctx.handoff({ to: '${b.id}', title: 'step 2', allowOffline: true }); return 'a handed on'; };`, env(a.id)),
    runDaemon(b, `export default async () => ({ status: 'success', summary: 'b done', handoff: { to_agent: '${c.id}', title: 'step 3', reason: 'the last step' } });`, env(b.id)),
    runDaemon(c, 'export default async () => \'c done\';', env(c.id)),
  ];
  const handed = await baton(['handoff', a.id, 'step 1', '--allow-offline', '--json'], { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: lead.token, ...noTracing, ...env('lead') });
  expect(handed.code, handed.stderr).toBe(0);
  const first = JSON.parse(handed.stdout) as { id: string };
  const tasks = await eventually(async () => {
    const rows = await lead.client.chain(first.id);
    return rows.length === 3 && rows.every((r) => r.status === 'completed') && rows;
  }, 60_000, 'the chain of three to complete');
  const { data: full } = await admin.db.from('task_handoffs').select('*').in('id', tasks.map((t) => t.id));
  if (!full) throw new Error('the chain is not readable');
  const byTitle = Object.fromEntries(full.map((t) => [t.title, t]));
  return { lead, a, b, c, daemons, step1: byTitle['step 1']!, step2: byTitle['step 2']!, step3: byTitle['step 3']!, cli: handed };
}

const spanIdOf = (traceparent: string | null) => traceparent?.split('-')[2];
/** OTLP's span kinds, as JSON carries them (protobuf's are read as the same numbers). */
const PRODUCER = 4;
const CONSUMER = 5;
const traceIdOf = (traceparent: string | null) => traceparent?.split('-')[1];

describe('one trace across a chain of agents', () => {
  it('exports spans that form one trace from the first hand-off to the last result, with the wait', async () => {
    const { step1, step2, step3, daemons } = await chain(tracingEnv);
    // The CLI's hand-off span is the root: the first task records its context.
    // The CLI's hand-off is a producer span, `send <agent>`, under the command's own span, the root.
    const firstHandoff = await eventually(async () => spans.find((s) => s.name === `send ${step1.to_agent}` && s.spanId === spanIdOf(step1.traceparent)), 20_000, 'the CLI\'s hand-off span');
    expect(firstHandoff).toMatchObject({ kind: PRODUCER, attributes: { 'messaging.operation.name': 'send', 'messaging.destination.name': step1.to_agent } });
    const command = await eventually(async () => spans.find((s) => s.spanId === firstHandoff.parentSpanId), 20_000, 'the CLI command\'s span');
    expect(command).toMatchObject({ name: 'baton handoff', service: 'lead' });
    expect(command.parentSpanId || undefined).toBeUndefined();
    const traceId = firstHandoff.traceId;
    const processOf = (taskId: string) => spans.find((s) => s.name.startsWith('process ') && s.attributes['baton.task.id'] === taskId);
    await eventually(async () => [step1, step2, step3].every((t) => processOf(t.id)) && spans.filter((s) => s.name === 'baton wait').length >= 3, 20_000, 'every task\'s spans');
    await Promise.all(daemons.map((d) => d.stop()));

    const ours = spans.filter((s) => [step1.id, step2.id, step3.id].includes(String(s.attributes['baton.task.id'])));
    expect(ours.length).toBe(6);
    expect(new Set(ours.map((s) => s.traceId))).toEqual(new Set([traceId]));
    for (const task of [step1, step2, step3]) {
      expect(traceIdOf(task.traceparent)).toBe(traceId);
      const processing = processOf(task.id)!;
      // A consumer span named after its destination, as the messaging conventions name a process.
      expect(processing).toMatchObject({ name: `process ${task.to_agent}`, kind: CONSUMER, attributes: { 'messaging.operation.name': 'process', 'messaging.operation.type': 'process' } });
      const waiting = ours.find((s) => s.name === 'baton wait' && s.attributes['baton.task.id'] === task.id)!;
      // Each task's spans hang under the context it was handed off in.
      expect(processing.parentSpanId).toBe(spanIdOf(task.traceparent));
      expect(waiting.parentSpanId).toBe(spanIdOf(task.traceparent));
      // The wait runs from the hand-off to the claim, by the database's clock.
      expect(Number(waiting.attributes['baton.wait_ms'])).toBeGreaterThanOrEqual(0);
      expect(Number(BigInt(waiting.endTimeUnixNano) - BigInt(waiting.startTimeUnixNano)) / 1e6).toBeCloseTo(Number(waiting.attributes['baton.wait_ms']), 0);
      // Execute and report are children of the processing span.
      const children = spans.filter((s) => s.parentSpanId === processing.spanId);
      expect(children.map((s) => s.name)).toEqual(expect.arrayContaining(['baton execute', 'baton report']));
      expect(new Set(children.map((s) => s.traceId))).toEqual(new Set([traceId]));
    }
    // Step 2 was handed off by step 1's executor: its hand-off span is a child of step 1's execute span.
    const step1Execute = spans.find((s) => s.name === 'baton execute' && s.parentSpanId === processOf(step1.id)!.spanId)!;
    const step2Handoff = spans.find((s) => s.spanId === spanIdOf(step2.traceparent))!;
    expect(step2Handoff).toMatchObject({ name: `send ${step2.to_agent}`, kind: PRODUCER, parentSpanId: step1Execute.spanId, service: expect.stringMatching(/^chain-a-/) });
    // The daemons' own calls (claims, heartbeats, the sweep) make no traces of their own.
    expect([...new Set(spans.filter((s) => /^chain-/.test(s.service) && !s.parentSpanId).map((s) => s.name))]).toEqual([]);
    // Step 3, a follow-up reported with step 2's result, carries step 2's context.
    expect(step3.traceparent).toBe(step2.traceparent);
  });

  it.each(['2025-11-25', '2026-07-28'] as const)('continues an MCP host\'s trace (%s): a hand-off by tool call records the context the call carried', async (era) => {
    const [host, worker] = await Promise.all([newAgent('mcp-host'), newAgent('mcp-worker')]);
    const spawned = {
      command: process.execPath, args: [cliPath, 'mcp', '--no-push'],
      env: { PATH: process.env.PATH ?? '', SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: host.token, LOG_LEVEL: 'warn', ...tracingEnv(host.id) },
      stderr: 'pipe' as const,
    };
    // The 2025 eras' client, or the 2.x line's pinned to 2026-07-28 (traceparent beside the envelope in _meta).
    const client = era === '2025-11-25'
      ? new Client({ name: 'traced-host', version: '1.0.0' })
      : new ModernClient({ name: 'traced-host', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect((era === '2025-11-25' ? new StdioClientTransport(spawned) : new ModernStdioTransport(spawned)) as never);
    try {
      const traceId = crypto.randomBytes(16).toString('hex');
      const spanId = crypto.randomBytes(8).toString('hex');
      const result = await client.callTool({ name: 'handoff', arguments: { to: worker.id, title: 'traced by the host', allow_offline: true }, _meta: { traceparent: `00-${traceId}-${spanId}-01` } });
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      const { data } = await admin.db.from('task_handoffs').select('traceparent').eq('from_agent', host.id).single();
      expect(traceIdOf(data!.traceparent)).toBe(traceId);
      const call = await eventually(async () => spans.find((s) => s.spanId === spanIdOf(data!.traceparent)), 20_000, 'the tool call\'s hand-off span');
      expect(call).toMatchObject({ name: `send ${worker.id}`, traceId, parentSpanId: spanId });
    } finally {
      await client.close();
    }
  });

  it('batches as the OTEL_BSP_* settings say', async () => {
    const [sender, worker] = await Promise.all([newAgent('bsp-sender'), newAgent('bsp-worker')]);
    // One span per export, and no export by the clock for an hour: only the batch size sends them.
    const daemon = runDaemon(worker, 'export default async () => \'done\';', { ...tracingEnv(worker.id), OTEL_BSP_SCHEDULE_DELAY: '3600000', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1' });
    try {
      const task = await sender.client.handoff({ to: worker.id, title: 'batched', allowOffline: true });
      await eventually(async () => spans.some((s) => s.name === `process ${worker.id}` && s.attributes['baton.task.id'] === task.id), 30_000, 'the process span, while the daemon runs');
      const ours = exports.filter((e) => e.services.includes(worker.id));
      expect(ours.length).toBeGreaterThan(1);
      expect(ours.every((e) => e.count === 1), JSON.stringify(ours)).toBe(true);
    } finally {
      await daemon.stop();
    }
  });

  it('sends OTLP in protobuf unless told otherwise, in JSON when told, and refuses gRPC with what to set', async () => {
    const sender = await newAgent('otlp-encodings');
    const worker = await newAgent('otlp-encodings-to');
    const env = { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: sender.token, ...noTracing, OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: sender.id };
    for (const [protocol, type] of [[undefined, 'application/x-protobuf'], ['http/json', 'application/json']] as const) {
      const before = encodings.length;
      const handed = await baton(['handoff', worker.id, `sent in ${protocol ?? 'the default'}`, '--allow-offline', '--json'], { ...env, OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
      expect(handed.code, handed.stderr).toBe(0);
      const { id } = JSON.parse(handed.stdout) as { id: string };
      const { data } = await admin.db.from('task_handoffs').select('traceparent').eq('id', id).single();
      const span = await eventually(async () => spans.find((s) => s.spanId === spanIdOf(data!.traceparent)), 20_000, `the hand-off's span in ${type}`);
      expect(span).toMatchObject({ name: `send ${worker.id}`, service: sender.id, traceId: traceIdOf(data!.traceparent) });
      expect(encodings.slice(before)).toContain(type);
    }
    // A command that fails: its span says how, in error.type.
    const missing = await baton(['show', '00000000-0000-4000-8000-000000000000'], { ...env, OTEL_SERVICE_NAME: `${sender.id}-show` });
    expect(missing.code).toBe(1);
    const failed = await eventually(async () => spans.find((s) => s.service === `${sender.id}-show` && s.name === 'baton show'), 20_000, 'the failed command\'s span');
    expect(failed.attributes['error.type']).toEqual(expect.any(String));
    const refused = await baton(['inbox'], { ...env, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL is "grpc", which Baton does not send: set http\/protobuf \(the default\) or http\/json/);
  });

  it('exports nothing without OTEL_* settings, and records no trace context', async () => {
    const before = spans.length;
    const { step1, step2, step3, daemons } = await chain(() => ({}));
    await Promise.all(daemons.map((d) => d.stop()));
    // The exporters would have sent within 100 ms of each span; give them far longer than that.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(spans.slice(before).filter((s) => [step1.id, step2.id, step3.id].includes(String(s.attributes['baton.task.id'])))).toEqual([]);
    expect([step1, step2, step3].map((t) => t.traceparent)).toEqual([null, null, null]);
  });

  it('with the console exporter, writes spans to stderr and leaves stdout to the answer: one JSON document, or MCP\'s stream', async () => {
    const [sender, to] = await Promise.all([newAgent('console-sender'), newAgent('console-to')]);
    const consoleEnv = { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: sender.token, OTEL_TRACES_EXPORTER: 'console' };
    const handed = await baton(['handoff', to.id, 'traced to the console', '--allow-offline', '--json'], consoleEnv);
    expect(handed.code, handed.stderr).toBe(0);
    expect(JSON.parse(handed.stdout)).toMatchObject({ title: 'traced to the console' });
    const lines = handed.stderr.trim().split('\n').map((line) => JSON.parse(line) as { traceId: string; name: string });
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((span) => /^[0-9a-f]{32}$/.test(span.traceId))).toBe(true);

    const transport = new StdioClientTransport({
      command: process.execPath, args: [cliPath, 'mcp', '--no-push'],
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...consoleEnv },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'console-host', version: '1.0.0' });
    // The SDK's client refuses any line on stdout that is not JSON-RPC: these calls would fail.
    const refused: Error[] = [];
    client.onerror = (err) => { refused.push(err); };
    await client.connect(transport);
    await client.callTool({ name: 'handoff', arguments: { to: to.id, title: 'traced from MCP', allow_offline: true } });
    await client.callTool({ name: 'list_tasks', arguments: { box: 'sent' } });
    await client.close();
    expect(refused).toEqual([]);
  });
});

describe('a daemon\'s metrics', () => {
  it('count the open tasks the agent can see, by status and capability, read at each scrape', async () => {
    const agent = await newAgent('metrics-queue');
    const capability = `unserved-${crypto.randomUUID().slice(0, 8)}`;
    await agent.client.broadcast({ title: 'nobody can do this yet', requiredCapabilities: [capability] });
    const metrics = new DaemonMetrics(agent.client, { running: () => 0, capacity: () => 1, pushUp: () => true });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`^baton_queue_tasks\\{status="pending",capability="${capability}",agent="${agent.id}"\\} 1$`, 'm'));
  });

  it('are still served, all but the queue\'s, while the database cannot be read', async () => {
    const agent = await newAgent('metrics-dark');
    // Nothing listens there: every call to the Baton API fails, as when the project is down.
    const client = createBatonClient({ url: `http://127.0.0.1:${await freePort()}`, ...agentKey(stack), token: agent.token });
    const metrics = new DaemonMetrics(client, { running: () => 1, capacity: () => 4, pushUp: () => false });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`^baton_agent_capacity\\{agent="${agent.id}"\\} 4$`, 'm'));
    expect(text).toMatch(/^baton_tasks_running\{agent=".*"\} 1$/m);
    expect(text).not.toMatch(/^baton_queue_tasks\{/m);
  });
});

const prometheus = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => fs.existsSync(p));
if (!prometheus) console.warn('telemetry.test.ts: the Prometheus scrape test is skipped: no prometheus found (apt-get install prometheus); .ci/run installs it.');

describe.skipIf(!prometheus)('metrics', () => {
  it('are scraped by Prometheus from a daemon, and its query API counts the completed tasks', async () => {
    const [boss, worker] = await Promise.all([newAgent('metrics-boss'), newAgent('metrics-worker', { capabilities: ['sums'] })]);
    const metricsPort = await freePort();
    const daemon = runDaemon(worker, 'export default async () => \'added\';', {}, { metricsPort, capabilities: ['sums'] });
    const tasks = await Promise.all([1, 2, 3].map((i) => boss.client.broadcast({ title: `sum ${i}`, requiredCapabilities: ['sums'] })));
    await eventually(async () => (await Promise.all(tasks.map((t) => boss.client.getTask(t.id)))).every((t) => t.status === 'completed'), 30_000, 'the three tasks');
    const own = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const sample = (name: string) => own.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('capability="sums"') && l.includes(`agent="${worker.id}"`));
    expect(sample('baton_tasks_completed_total')).toMatch(/ 3$/);
    expect(sample('baton_tasks_claimed_total')).toMatch(/ 3$/);
    expect(sample('baton_task_claim_delay_seconds_count')).toMatch(/ 3$/);
    // Push joins in its own time (the tasks may have gone by the poll first): wait for it to say so.
    await eventually(async () => /^baton_push_up\{agent=".*"\} 1$/m.test(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()), 20_000, 'push to be up');
    expect(own).toMatch(/^baton_agent_capacity\{agent=".*"\} \d+$/m);

    const dir = fs.mkdtempSync(path.join(work, 'prometheus-'));
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: baton\n    static_configs:\n      - targets: ['127.0.0.1:${metricsPort}']\n`);
    const webPort = await freePort([metricsPort]);
    const server = spawn(prometheus!, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${webPort}`], { stdio: 'ignore', detached: true });
    children.push(server);
    try {
      const query = `baton_tasks_completed_total{agent="${worker.id}"}`;
      const value = await eventually(async () => {
        const res = await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(query)}`).catch(() => undefined);
        if (!res?.ok) return undefined;
        const body = await res.json() as { data: { result: Array<{ value: [number, string]; metric: Record<string, string> }> } };
        return body.data.result[0];
      }, 60_000, 'Prometheus to scrape the daemon');
      expect(value.value[1]).toBe('3');
      expect(value.metric).toMatchObject({ capability: 'sums', job: 'baton' });
    } finally {
      process.kill(-server.pid!, 'SIGTERM');
      await daemon.stop();
    }
  });
});
