/**
 * What the standard OpenTelemetry settings ask for, read without loading OpenTelemetry: a process
 * that is not asked to trace (most CLI commands) never loads it.
 */
import { ConfigError } from '../config.js';

/** Whether the standard settings ask for traces. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER);
}

/**
 * The OTLP encoding the settings ask for (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL): http/protobuf unless they say otherwise, as the OpenTelemetry
 * specification has it, or http/json. gRPC is not sent: a setting that asks for it is refused with
 * what to set instead.
 */
export function otlpProtocol(env: NodeJS.ProcessEnv = process.env): 'http/protobuf' | 'http/json' {
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (asked === 'http/protobuf' || asked === 'http/json') return asked;
  throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL is "${asked}", which Baton does not send: set http/protobuf (the default) or http/json, and point the endpoint at the collector's OTLP/HTTP port (4318)`);
}
