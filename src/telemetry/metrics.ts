/**
 * A daemon's Prometheus metrics (prom-client), served on --metrics-port at /metrics: tasks claimed,
 * completed, failed, retried and declined by capability; claim delay and run time; running tasks
 * against capacity; push up or down; request errors; and, read from the database at each scrape, the
 * open tasks by status and capability that this agent can see (the task_queue view).
 */
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { readQueue } from '../client/admin.js';
import type { BatonClient } from '../client/agent.js';
import type { Task } from '../schemas.js';

/** The label a task is counted under: its first required capability, else its task_type, else "direct". */
export function capabilityOf(task: Task): string {
  if (task.required_capabilities[0]) return task.required_capabilities[0];
  return typeof task.payload.task_type === 'string' ? task.payload.task_type.slice(0, 64) : 'direct';
}

export type Outcome = 'completed' | 'failed' | 'retried' | 'declined';

export interface DaemonGauges {
  running(): number;
  capacity(): number;
  pushUp(): boolean;
}

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly claimed: Counter;
  private readonly outcomes: Record<Outcome, Counter>;
  private readonly claimDelay: Histogram;
  private readonly runTime: Histogram;
  readonly requestErrors: Counter;
  private readonly tokens: Counter;
  private readonly cost: Counter;

  constructor(private readonly client: BatonClient, gauges: DaemonGauges) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ agent: client.agentId });
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['capability'], registers });
    this.claimed = counter('baton_tasks_claimed_total', 'Tasks this agent claimed.');
    this.outcomes = {
      completed: counter('baton_tasks_completed_total', 'Tasks this agent completed.'),
      failed: counter('baton_tasks_failed_total', 'Tasks this agent reported failed (for good, or its last attempt).'),
      retried: counter('baton_tasks_retried_total', 'Tasks this agent reported failed with a retry asked for.'),
      declined: counter('baton_tasks_declined_total', 'Tasks this agent declined (no executor for them).'),
    };
    this.claimDelay = new Histogram({
      name: 'baton_task_claim_delay_seconds', help: 'From the hand-off to this agent\'s claim, by the database\'s clock.',
      labelNames: ['capability'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 900, 3600], registers,
    });
    this.runTime = new Histogram({
      name: 'baton_task_run_seconds', help: 'From the claim to the reported outcome, in this agent.',
      labelNames: ['capability', 'outcome'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800], registers,
    });
    this.requestErrors = new Counter({ name: 'baton_request_errors_total', help: 'Calls to the Baton API that failed: unreachable, or answered 5xx.', registers });
    this.tokens = new Counter({
      name: 'baton_tokens_total', help: 'Tokens the runs of this agent\'s tasks spent, by model and kind (input: not cached; output; cached: read from the provider\'s cache).',
      labelNames: ['model', 'kind'], registers,
    });
    this.cost = new Counter({ name: 'baton_cost_usd_total', help: 'What the runs of this agent\'s tasks cost, in US dollars, where the runtime reports it (Claude Code does).', labelNames: ['model'], registers });
    new Gauge({ name: 'baton_tasks_running', help: 'Tasks running in this agent now.', registers, collect() { this.set(gauges.running()); } });
    new Gauge({ name: 'baton_agent_capacity', help: 'How many tasks this agent runs at once (max_concurrent).', registers, collect() { this.set(gauges.capacity()); } });
    new Gauge({ name: 'baton_push_up', help: '1 while every push channel is joined, 0 while the agent polls instead.', registers, collect() { this.set(gauges.pushUp() ? 1 : 0); } });
    const db = this.client.db;
    new Gauge({
      name: 'baton_queue_tasks', help: 'Open tasks this agent can see, by status and required capability (the task_queue view).',
      labelNames: ['status', 'capability'] as const, registers,
      async collect() {
        // The daemon's own metrics are wanted most when the database cannot be read: then this one is
        // left out of the scrape (the failed call counts in baton_request_errors_total), never the rest.
        // Within a scrape's time (Prometheus gives 10 s): the client's retries would take longer.
        const rows = await readQueue(db, AbortSignal.timeout(3000)).catch(() => []);
        this.reset();
        for (const row of rows) this.set({ status: row.status, capability: row.capability ?? '' }, row.tasks);
      },
    });
  }

  taskClaimed(task: Task): void {
    const capability = capabilityOf(task);
    this.claimed.inc({ capability });
    if (task.claimed_at) this.claimDelay.observe({ capability }, Math.max(0, (Date.parse(task.claimed_at) - Date.parse(task.created_at)) / 1000));
  }

  taskEnded(task: Task, outcome: Outcome, seconds: number): void {
    const capability = capabilityOf(task);
    this.outcomes[outcome].inc({ capability });
    this.runTime.observe({ capability, outcome }, seconds);
  }

  /** Counts what one run spent. */
  spent(usage: { model: string; inputTokens: number; outputTokens: number; cachedTokens?: number; costUsd?: number }): void {
    this.tokens.inc({ model: usage.model, kind: 'input' }, usage.inputTokens);
    this.tokens.inc({ model: usage.model, kind: 'output' }, usage.outputTokens);
    this.tokens.inc({ model: usage.model, kind: 'cached' }, usage.cachedTokens ?? 0);
    if (usage.costUsd !== undefined) this.cost.inc({ model: usage.model }, usage.costUsd);
  }

  /** Serves /metrics on `port` (0: a free one); resolves with the server once it listens. */
  async serve(port: number, host = '0.0.0.0'): Promise<http.Server> {
    const server = http.createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('metrics are at /metrics\n');
        return;
      }
      this.registry.metrics().then((text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`));
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve()));
    return server;
  }
}

/** Where a report's words say it ended. */
export function outcomeOf(what: string): Outcome {
  if (what.startsWith('completed')) return 'completed';
  if (what.startsWith('declined')) return 'declined';
  if (what.includes('retry requested') || what.includes('running again') || what.startsWith('released')) return 'retried';
  return 'failed';
}

