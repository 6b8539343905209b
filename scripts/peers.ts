/**
 * The same workload as Baton's throughput run, for pg-boss and graphile-worker on the same Postgres:
 * bulk insert of TASKS no-op jobs, four workers × 10 draining them, Postgres CPU per job, and
 * send → start latency with idle workers. Each peer polls every second, like Baton's daemons, and
 * uses its own batching (pg-boss fetches and completes 10 per round trip; graphile-worker is woken by
 * NOTIFY and batches nothing by default).
 * Peers talk to Postgres directly; Baton goes through HTTP and per-agent RLS.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, run as runGraphile, runMigrations, type Runner } from 'graphile-worker';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { drained } from './drain.js';
import { cpuMsPer, cpuSplit, type CpuSplit, type StackPids } from './postgres-cpu.js';

export interface PeerResult {
  insertsPerSecond: number;
  jobsPerSecond: number;
  cpuMsPerJob: CpuSplit;
  latencies: number[];
}

interface Peer {
  insert(queue: string, count: number): Promise<void>;
  startWorkers(queue: string, onJob: (sentAt: number | undefined) => void): Promise<void>;
  openJobs(queue: string): Promise<number>;
  send(queue: string, sentAt: number): Promise<void>;
  stopWorkers(): Promise<void>;
  close(): Promise<void>;
}

const WORKERS = 4;
const CONCURRENCY = 10;

async function pgBoss(connectionString: string): Promise<Peer> {
  const failures: unknown[] = [];
  const producer = new PgBoss({ connectionString, max: WORKERS + 2, supervise: false, schedule: false });
  producer.on('error', (err) => failures.push(err));
  await producer.start();
  let stopping = false;
  let loops: Array<Promise<void>> = [];
  return {
    async insert(queue, count) {
      await producer.createQueue(queue);
      for (let i = 0; i < count; i += 1000) {
        await producer.insert(Array.from({ length: Math.min(1000, count - i) }, () => ({ name: queue, data: {} })));
      }
    },
    async startWorkers(queue, onJob) {
      await producer.createQueue(queue);
      // pg-boss 10's work() waits a whole polling interval after every fetch, even a full one; its
      // fetch and complete in a loop fetch again at once while the queue gives work, as Baton's daemon
      // and graphile-worker do, and wait a second when it is empty.
      stopping = false;
      loops = Array.from({ length: WORKERS }, async () => {
        while (!stopping) {
          const jobs = await producer.fetch<{ sentAt?: number }>(queue, { batchSize: CONCURRENCY });
          if (jobs.length === 0) {
            await sleep(1000);
            continue;
          }
          for (const job of jobs) onJob(job.data.sentAt);
          await producer.complete(queue, jobs.map((j) => j.id));
        }
      });
    },
    async openJobs(queue) {
      if (failures.length) throw failures[0];
      const { rows } = await producer.getDb().executeSql(
        "select count(*)::int as open from pgboss.job where name = $1 and state <> 'completed'", [queue]) as { rows: Array<{ open: number }> };
      return rows[0]!.open;
    },
    async send(queue, sentAt) {
      await producer.send(queue, { sentAt });
    },
    async stopWorkers() {
      stopping = true;
      await Promise.all(loops);
      loops = [];
    },
    async close() {
      await producer.stop({ graceful: true, wait: true, timeout: 5000 });
    },
  };
}

async function graphileWorker(connectionString: string): Promise<Peer> {
  // As many connections as pg-boss's producer has (workers + 2), for single enqueues in flight together.
  const pool = new pg.Pool({ connectionString, max: WORKERS + 2 });
  pool.on('error', () => undefined);
  let runners: Runner[] = [];
  // Each runner gets a pool of its own, as graphile-worker would make (concurrency + 2), but one that
  // ignores the errors of idle connections when Postgres shuts down after the bench.
  let runnerPools: pg.Pool[] = [];
  const logger = new Logger(() => () => undefined);
  const options = { concurrency: CONCURRENCY, pollInterval: 1000, noHandleSignals: true, logger };
  // Migrate once, before the workers race to.
  await runMigrations({ connectionString, logger });
  return {
    async insert(queue, count) {
      for (let i = 0; i < count; i += 1000) {
        await pool.query(
          `select count(*) from graphile_worker.add_jobs(array(
             select json_populate_record(null::graphile_worker.job_spec, json_build_object('identifier', $1::text))
             from generate_series(1, $2)))`,
          [queue, Math.min(1000, count - i)]);
      }
    },
    async startWorkers(queue, onJob) {
      runnerPools = Array.from({ length: WORKERS }, () => {
        const runnerPool = new pg.Pool({ connectionString, max: CONCURRENCY + 2 });
        runnerPool.on('error', () => undefined);
        return runnerPool;
      });
      runners = await Promise.all(runnerPools.map((runnerPool) => runGraphile({
        ...options,
        pgPool: runnerPool,
        taskList: { [queue]: async (payload) => { onJob((payload as { sentAt?: number } | null)?.sentAt); } },
      })));
    },
    async openJobs(queue) {
      const { rows } = await pool.query('select count(*)::int as open from graphile_worker.jobs where task_identifier = $1', [queue]);
      return rows[0].open;
    },
    async send(queue, sentAt) {
      await pool.query('select graphile_worker.add_job($1, $2::json)', [queue, JSON.stringify({ sentAt })]);
    },
    async stopWorkers() {
      await Promise.all(runners.map((r) => r.stop()));
      await Promise.all(runnerPools.map((p) => p.end()));
      runners = [];
      runnerPools = [];
    },
    async close() {
      await pool.end();
    },
  };
}

export const peers = { 'pg-boss 10': pgBoss, 'graphile-worker 0.16': graphileWorker } as const;

/** One peer, open on the stack's Postgres: its throughput runs, one at a time, then its latency run. */
export interface OpenPeer {
  /** One run of `tasks` no-op jobs: bulk insert, then four workers × 10 draining them. */
  run(queue: string, tasks: number): Promise<PeerResult>;
  /** Send → start latency with idle workers, over 60 jobs. */
  latency(): Promise<number[]>;
  /** `count` single enqueue calls, `inFlight` at a time, with no workers: calls per second and CPU per call. */
  enqueue(queue: string, count: number, inFlight: number): Promise<{ perSecond: number; cpuMsPerCall: CpuSplit }>;
  close(): Promise<void>;
}

export async function openPeer(name: keyof typeof peers, connectionString: string, stack: StackPids): Promise<OpenPeer> {
  const peer = await peers[name](connectionString);
  return {
    async run(queue, tasks) {
      try {
        const cpuBefore = cpuSplit(stack);
        const started = performance.now();
        await peer.insert(queue, tasks);
        const inserted = performance.now();
        const counter = { started: 0 };
        await peer.startWorkers(queue, () => { counter.started += 1; });
        await drained(counter, tasks, async () => await peer.openJobs(queue) > 0);
        const emptied = performance.now();
        const cpu = cpuMsPer(cpuBefore, cpuSplit(stack), tasks);
        return {
          insertsPerSecond: tasks / ((inserted - started) / 1000),
          jobsPerSecond: tasks / ((emptied - started) / 1000),
          cpuMsPerJob: cpu,
          latencies: [],
        };
      } finally {
        await peer.stopWorkers();
      }
    },
    async latency() {
      const latencies: number[] = [];
      try {
        await peer.startWorkers('latency', (sentAt) => { if (sentAt) latencies.push(Date.now() - sentAt); });
        await sleep(1500);
        for (let i = 0; i < 60; i += 1) {
          await peer.send('latency', Date.now());
          await sleep(100 + Math.random() * 100);
        }
        await sleep(3000);
      } finally {
        await peer.stopWorkers();
      }
      return latencies;
    },
    async enqueue(queue, count, inFlight) {
      await peer.insert(queue, 0);
      const cpuBefore = cpuSplit(stack);
      const started = performance.now();
      await inParallel(count, inFlight, () => peer.send(queue, Date.now()));
      const seconds = (performance.now() - started) / 1000;
      return { perSecond: count / seconds, cpuMsPerCall: cpuMsPer(cpuBefore, cpuSplit(stack), count) };
    },
    async close() {
      await peer.stopWorkers().catch(() => undefined);
      await peer.close();
    },
  };
}

/** Runs `call` `count` times, at most `inFlight` at once. */
export async function inParallel(count: number, inFlight: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, async () => {
    while (next < count) await call(next++);
  }));
}
