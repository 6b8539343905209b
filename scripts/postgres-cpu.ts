/**
 * CPU seconds used so far by every process of one program on this machine (from /proc; Linux only),
 * counting processes that already exited and were reaped by one of them: Postgres backends that close
 * are reaped by the postmaster, whose children's time keeps their share.
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

export function cpuSeconds(program: string): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== program) continue;
      total += times(pid).reduce((a, b) => a + b, 0);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

export interface CpuSplit { postgres: number; postgrest: number; gateway: number; node: number }

/**
 * CPU seconds by Postgres, PostgREST, the stack's gateway (its Node process, when it runs apart) and
 * this Node process (the client, daemons or peer workers).
 */
export function cpuSplit(gatewayPid?: number): CpuSplit {
  const own = process.cpuUsage();
  return {
    postgres: cpuSeconds('postgres'), postgrest: cpuSeconds('postgrest'),
    gateway: gatewayPid === undefined ? 0 : processCpuSeconds(gatewayPid), node: (own.user + own.system) / 1e6,
  };
}

/** CPU milliseconds per task of each program between two readings. */
export function cpuMsPer(before: CpuSplit, after: CpuSplit, tasks: number): CpuSplit {
  const per = (k: keyof CpuSplit) => ((after[k] - before[k]) * 1000) / tasks;
  return { postgres: per('postgres'), postgrest: per('postgrest'), gateway: per('gateway'), node: per('node') };
}
