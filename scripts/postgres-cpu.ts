/**
 * CPU seconds used so far by one stack's processes (from /proc; Linux only), counting processes that
 * already exited and were reaped by one of them: Postgres backends that close are reaped by the
 * postmaster, whose children's time keeps their share.
 */
import fs from 'node:fs';

const TICK = 100; // USER_HZ on Linux

/** A process's utime, stime, cutime and cstime, in seconds. */
function times(pid: number | string): [number, number, number, number] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After "pid (comm) ": state is field 3, so field n is at n - 3: utime 14, stime 15, cutime 16, cstime 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return [fields[11]! / TICK, fields[12]! / TICK, fields[13]! / TICK, fields[14]! / TICK];
}

/** CPU seconds used so far by one process (its own, not its children's). */
export function processCpuSeconds(pid: number): number {
  const [user, system] = times(pid);
  return user + system;
}

/** The parent's pid of a process, from /proc. */
function parentPid(pid: string): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/**
 * CPU seconds used so far by a process and its children, those that exited included (a postmaster and
 * its backends: one stack's Postgres when several run on the machine).
 */
export function cpuSecondsWithChildren(pid: number): number {
  let total = times(pid).reduce((a, b) => a + b, 0);
  for (const child of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (parentPid(child) === pid) total += times(child).reduce((a, b) => a + b, 0);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

export interface CpuSplit { postgres: number; postgrest: number; gateway: number; node: number }

/** One stack's processes: its Node process (the gateway), its postmaster and its PostgREST. */
export interface StackPids { pid: number; postgresPid: number; postgrestPid: number }

/**
 * CPU seconds by one stack's Postgres, PostgREST and gateway, and by this Node process (the client,
 * daemons or peer workers). Other Postgres on the machine (a test suite beside the bench, another
 * stack) neither add to it nor, as they exit, take from it.
 */
export function cpuSplit(stack: StackPids): CpuSplit {
  const own = process.cpuUsage();
  return {
    postgres: cpuSecondsWithChildren(stack.postgresPid), postgrest: processCpuSeconds(stack.postgrestPid),
    gateway: processCpuSeconds(stack.pid), node: (own.user + own.system) / 1e6,
  };
}

/** CPU milliseconds per task of each program between two readings. */
export function cpuMsPer(before: CpuSplit, after: CpuSplit, tasks: number): CpuSplit {
  const per = (k: keyof CpuSplit) => ((after[k] - before[k]) * 1000) / tasks;
  return { postgres: per('postgres'), postgrest: per('postgrest'), gateway: per('gateway'), node: per('node') };
}
