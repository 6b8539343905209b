/**
 * Deterministic executors for the demo: a researcher, a coder and an auditor that hand structured work
 * along with no LLM and no network. A real team swaps any of them for an LLM-backed shell command.
 */
import type { ExecutorContext, Handler } from '../contract.js';
import { processSettings } from '../config.js';
import type { ExpectedOutput, LineageRow } from '../schemas.js';
import { finalStatuses } from '../schemas.js';

interface Competitor { name: string; url: string; pricing?: string }
interface Comparison { name: string; api_style: string; auth: string; rate_limit: string; pricing: string | null }

/** How long each step dawdles: long enough to watch (`npm run demo -- --board` sets 2500), short by default. */
const stepMs = processSettings.demoStepMs();
const pause = () => new Promise((resolve) => setTimeout(resolve, stepMs));

export const competitorsSchema = {
  type: 'object',
  required: ['topic', 'competitors'],
  properties: {
    topic: { type: 'string' },
    competitors: {
      type: 'array', minItems: 3, maxItems: 3,
      items: { type: 'object', required: ['name', 'url'], properties: { name: { type: 'string' }, url: { type: 'string' }, pricing: { type: 'string' } } },
    },
  },
} as const;

export const comparisonSchema = {
  type: 'object',
  required: ['rows'],
  properties: {
    rows: {
      type: 'array',
      items: {
        type: 'object', required: ['name', 'api_style', 'auth', 'rate_limit', 'pricing'],
        properties: { name: { type: 'string' }, api_style: { type: 'string' }, auth: { type: 'string' }, rate_limit: { type: 'string' }, pricing: { type: ['string', 'null'] } },
      },
    },
  },
} as const;

const comparisonOutput: ExpectedOutput[] = [{ name: 'api-comparison.json', media_type: 'application/json', required: true, json_schema: comparisonSchema }];
const auditOutput: ExpectedOutput[] = [{ name: 'audit.json', media_type: 'application/json', required: true }];

/** The demo's first hand-off, from the person asking to the researcher; the agents hand the rest along. */
export const demoRequest = {
  to: 'researcher',
  title: 'Find 3 competitors of Baton',
  payload: { task_type: 'research', topic: 'task hand-off between AI agents' },
  expectedOutputs: [{ name: 'competitors.json', media_type: 'application/json', required: true, json_schema: competitorsSchema }],
};

/** Whether the demo's chain is over: every task final, and an audit that passed. */
export function demoFinished(chain: LineageRow[]): boolean {
  return chain.length > 0 && chain.every((r) => finalStatuses.includes(r.status))
    && chain.some((r) => r.title.startsWith('Audit') && r.result_status === 'success');
}

/** Finds three competitors (one without published pricing) and asks the coder to compare their APIs. */
export const research: Handler = async (task, ctx) => {
  await ctx.progress('searching the market', 30);
  await pause();
  const competitors: Competitor[] = [
    { name: 'Acme Queue', url: 'https://acme-queue.example', pricing: '$49 per month' },
    { name: 'RelayHub', url: 'https://relayhub.example', pricing: '$0.40 per 1,000 tasks' },
    { name: 'TaskPipe', url: 'https://taskpipe.example' },
  ];
  await ctx.artifact('competitors.json', { json: { topic: String(task.payload.topic ?? 'agent task queues'), competitors } });
  await ctx.progress('found 3 competitors', 100);
  return {
    status: 'success',
    summary: `found ${competitors.length} competitors`,
    artifacts: [{ name: 'competitors.json', path: 'competitors.json' }],
    handoff: {
      capability: 'code', task_type: 'compare', title: 'Compare the competitors\' APIs',
      reason: 'turn the competitor list into an API comparison', expected_outputs: comparisonOutput,
    },
  };
};

/** Compares the APIs; on a follow-up from the auditor, fixes what the audit found. */
export const compare: Handler = async (task, ctx) => {
  const competitors = (ctx.input('competitors.json')?.json as { competitors: Competitor[] } | undefined)?.competitors;
  if (!competitors) throw new Error('no competitors.json among the inputs');
  const problems = ((task.payload.context as { problems?: string[] } | undefined)?.problems) ?? [];
  const previous = (ctx.input('api-comparison.json')?.json as { rows: Comparison[] } | undefined)?.rows;
  let rows: Comparison[];
  if (problems.length && previous) {
    await ctx.progress(`fixing ${problems.length} problem(s) from the audit`, 50);
    rows = previous.map((row) => (row.pricing === null ? { ...row, pricing: lookUpPricing(row.name) } : row));
  } else {
    await ctx.progress('reading the API docs', 40);
    rows = competitors.map((c, i) => ({
      name: c.name,
      api_style: ['REST', 'GraphQL', 'gRPC'][i % 3]!,
      auth: ['API key', 'OAuth 2', 'mTLS'][i % 3]!,
      rate_limit: ['100/s', '50/s', '1000/min'][i % 3]!,
      pricing: c.pricing ?? null,
    }));
  }
  await pause();
  await ctx.artifact('api-comparison.json', { json: { rows } });
  return {
    status: 'success',
    summary: problems.length ? `fixed: ${problems.join('; ')}` : `compared ${rows.length} APIs`,
    artifacts: [{ name: 'api-comparison.json', path: 'api-comparison.json' }],
    handoff: { capability: 'audit', task_type: 'audit', title: 'Audit the API comparison', reason: 'check it against the research', expected_outputs: auditOutput },
  };
};

/** Checks the comparison against the research; sends what it finds back to the coder. */
export const audit: Handler = async (_task, ctx: ExecutorContext) => {
  const comparison = ctx.input('api-comparison.json')?.json as { rows: Comparison[] } | undefined;
  const research = ctx.input('competitors.json')?.json as { competitors: Competitor[] } | undefined;
  if (!comparison || !research) throw new Error('the audit needs api-comparison.json and competitors.json');
  await ctx.progress('checking every row against the research', 60);
  const problems = [
    ...research.competitors.filter((c) => !comparison.rows.some((r) => r.name === c.name)).map((c) => `${c.name} is missing`),
    ...comparison.rows.filter((r) => r.pricing === null).map((r) => `${r.name} has no pricing`),
  ];
  await pause();
  await ctx.artifact('audit.json', { json: { passed: problems.length === 0, problems } });
  if (problems.length === 0) return { status: 'success', summary: 'the comparison passes the audit', artifacts: [{ name: 'audit.json', path: 'audit.json' }] };
  return {
    status: 'partial',
    summary: `${problems.length} problem(s) found`,
    artifacts: [{ name: 'audit.json', path: 'audit.json' }],
    handoff: {
      capability: 'code', task_type: 'compare', title: `Fix: ${problems.join('; ')}`,
      reason: 'the audit found problems', context: { problems }, expected_outputs: comparisonOutput,
    },
  };
};

function lookUpPricing(name: string): string {
  return name === 'TaskPipe' ? 'free tier, then $29 per month' : 'on request';
}
