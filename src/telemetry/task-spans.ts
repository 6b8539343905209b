/**
 * The spans of one task in the daemon, children of the context it was handed off in: the wait (from
 * the hand-off to the claim, by the database's clock), then the processing, with the executor's run and
 * the report inside it. Attributes follow OpenTelemetry's messaging conventions and name Baton's ids.
 * With tracing off, every call here just runs what it is given.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { Task } from '../schemas.js';
import { contextOfTask, ending, traceparentOf, tracer, tracing } from './tracing.js';

export function taskAttributes(task: Task, agentId: string): Attributes {
  return {
    'messaging.system': 'baton',
    'messaging.operation.name': 'process',
    'messaging.operation.type': 'process',
    'messaging.destination.name': task.to_agent ?? (task.required_capabilities.join(',') || 'anyone'),
    'messaging.message.id': task.id,
    'baton.task.id': task.id,
    'baton.task.title': task.title,
    'baton.agent.id': agentId,
    'baton.sender.id': task.from_agent,
    'baton.capability': task.required_capabilities.join(','),
    'baton.attempt': task.attempts,
    ...(task.root_task_id ? { 'baton.root_task.id': task.root_task_id } : {}),
  };
}

/** Runs `work` inside the task's processing span, after recording its wait. */
export async function processSpan<T>(task: Task, agentId: string, work: () => Promise<T>): Promise<T> {
  if (!tracing()) return work();
  const parent = contextOfTask(task);
  const attributes = taskAttributes(task, agentId);
  const created = Date.parse(task.created_at);
  const claimed = task.claimed_at ? Date.parse(task.claimed_at) : Date.now();
  tracer.startSpan('baton wait', { kind: SpanKind.INTERNAL, startTime: created, attributes: { ...attributes, 'baton.wait_ms': claimed - created } }, parent).end(claimed);
  return tracer.startActiveSpan(`process ${String(attributes['messaging.destination.name'])}`, { kind: SpanKind.CONSUMER, attributes: { ...attributes, 'baton.wait_ms': claimed - created } }, parent, (span) => {
    span.addEvent('claimed', { 'baton.wait_ms': claimed - created }, claimed);
    return ending(span, work);
  });
}

/** Runs `work` in a child span of the active one (the task's processing), marking a throw as an error. */
export async function childSpan<T>(name: string, attributes: Attributes, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!tracing()) return work(undefined);
  return tracer.startActiveSpan(name, { attributes }, (span) => ending(span, () => work(span)));
}

/** Marks the active span as ending in `outcome` (completed, failed, …), an error where it failed. */
export function markOutcome(outcome: string, failed: boolean): void {
  const span = trace.getSpan(context.active());
  if (!span) return;
  span.setAttribute('baton.outcome', outcome);
  if (failed) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    span.setAttribute('error.type', outcome);
  }
}

/** TRACEPARENT for a command executor, from the span it runs in. */
export const traceEnv = (span: Span | undefined): Record<string, string> => {
  const tp = span ? traceparentOf(span) : undefined;
  return tp ? { TRACEPARENT: tp } : {};
};
