/**
 * Traces, with OpenTelemetry's API and SDK. Nothing is set up, loaded or exported unless the standard
 * settings ask for it (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
 * OTEL_TRACES_EXPORTER=otlp|console); then spans go out as OTLP over HTTP, protobuf or JSON (or to the
 * console), batched as the OTEL_BSP_* settings say, and every
 * request Baton's clients make carries the active context as W3C `traceparent` and `tracestate` headers,
 * which the database records on the tasks it hands off.
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { traceExport, tracingWanted } from '../config.js';
import { context, createContextKey, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span, type SpanContext, TraceFlags } from '@opentelemetry/api';

export { traceExport, tracingWanted };

export const tracer = trace.getTracer('baton');

let enabled = false;

/** Whether this process records spans (startTracing set it up). */
export const tracing = () => enabled;

/**
 * Sets up tracing for this process when the settings ask for it, named `serviceName` unless
 * OTEL_SERVICE_NAME says otherwise. Returns what flushes and ends it (at exit).
 */
export async function startTracing(serviceName: string): Promise<() => Promise<void>> {
  if (enabled || !tracingWanted()) return async () => undefined;
  const exportTo = traceExport();
  const toConsole = exportTo === 'console';
  const protocol = toConsole ? 'http/json' : exportTo;
  const [sdk, { OTLPTraceExporter }, { AsyncLocalStorageContextManager }, core, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/context-async-hooks'), import('@opentelemetry/core'), import('@opentelemetry/resources'),
  ]);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }));
  const exporter = toConsole ? stderrExporter(core.ExportResultCode.SUCCESS) : new OTLPTraceExporter();
  const resource = resources.defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The batch's settings as the OpenTelemetry specification names them; this SDK no longer reads them itself.
  const batch = {
    scheduledDelayMillis: core.getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: core.getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: core.getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: core.getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
  const provider = new sdk.TracerProvider({ resource, spanProcessors: [new sdk.BatchSpanProcessor({ exporter, ...batch })] });
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  return async () => {
    await provider.shutdown();
    enabled = false;
  };
}

/**
 * OTEL_TRACES_EXPORTER=console: each span as one JSON line on stderr. The SDK's own console exporter
 * writes to stdout, which is the CLI's answer (one JSON document with --json) and `baton mcp`'s
 * JSON-RPC stream; a span there would corrupt both.
 */
function stderrExporter(success: number): SpanExporter {
  return {
    export(spans, done) {
      for (const span of spans) {
        const { traceId, spanId } = span.spanContext();
        process.stderr.write(`${JSON.stringify({
          traceId, spanId, parentSpanId: span.parentSpanContext?.spanId, name: span.name, kind: span.kind,
          service: span.resource.attributes['service.name'], start: hrIso(span.startTime), durationMs: span.duration[0] * 1e3 + span.duration[1] / 1e6,
          attributes: span.attributes, status: span.status, events: span.events.map((e) => ({ name: e.name, attributes: e.attributes })),
        })}\n`);
      }
      done({ code: success });
    },
    shutdown: async () => undefined,
  };
}

const hrIso = ([seconds, nanos]: [number, number]) => new Date(seconds * 1e3 + nanos / 1e6).toISOString();

/** Runs `work`, then ends `span`; a throw is recorded on it as an error and thrown on. */
export async function ending<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.setAttribute('error.type', errorType(err));
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The class of an error, as OpenTelemetry's `error.type` wants it (low in cardinality): Baton's error
 * code (BT001…), a system error's code (ECONNREFUSED…), else the error's name.
 */
export function errorType(err: unknown): string {
  if (!(err instanceof Error)) return '_OTHER';
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code ? code : err.name || '_OTHER';
}

/** The context a task was handed off in, to start its spans under; a task handed off untraced starts a trace. */
export function contextOfTask(task: { traceparent?: string | null; tracestate?: string | null }): Context {
  if (!task.traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent: task.traceparent, ...(task.tracestate ? { tracestate: task.tracestate } : {}) });
}

/** A span's context as a W3C traceparent (for a command executor's TRACEPARENT). */
export function traceparentOf(span: Span | SpanContext): string | undefined {
  const sc = 'spanContext' in span ? span.spanContext() : span;
  if (!trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

const untracedKey = createContextKey('baton untraced');

/** Runs `work` outside every trace: its requests make no spans and carry no trace context. */
export function untraced<T>(work: () => T): T {
  return enabled ? context.with(ROOT_CONTEXT.setValue(untracedKey, true), work) : work();
}

/** Whether the active context is one that `untraced` made. */
export const isUntraced = () => context.active().getValue(untracedKey) === true;

/** The W3C headers for the active context (none while tracing is off). */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (enabled) propagation.inject(context.active(), carrier);
  return carrier;
}

