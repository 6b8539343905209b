/**
 * Ending what an executor started: the process, its group, what left the group, and what outlived its
 * parent. Every executor that starts processes (a shell command, a coding agent's CLI) marks them with
 * `BATON_RUN=<mark>` in their environment and ends them here, so that a timeout, a cancel or a crash
 * leaves nothing running.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';

/** A fresh mark for a run's processes: give it to the process as BATON_RUN. */
export const runMark = (): string => crypto.randomUUID();

/**
 * Ends a process and everything under it: its process group, every descendant that left the group (a
 * tool that started its own), and every process that carries the run's mark in its environment (one
 * whose parent died first). SIGTERM first, SIGKILL two seconds later for whatever is left.
 */
export function endTree(pid: number, mark: string): void {
  const pids = [...new Set([pid, ...descendants(pid), ...marked(mark)])];
  const signal = (sig: NodeJS.Signals) => {
    try { process.kill(-pid, sig); } catch { /* the group is gone */ }
    for (const p of pids) { try { process.kill(p, sig); } catch { /* gone */ } }
  };
  signal('SIGTERM');
  setTimeout(() => { for (const p of marked(mark)) pids.push(p); signal('SIGKILL'); }, 2000).unref();
}

const processIds = (): string[] => {
  try {
    return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
};

/** The processes whose environment carries BATON_RUN=<mark> (this user's; Linux). */
function marked(mark: string): number[] {
  const needle = `\0BATON_RUN=${mark}\0`;
  return processIds().filter((e) => {
    try {
      return `\0${fs.readFileSync(`/proc/${e}/environ`, 'latin1')}`.includes(needle);
    } catch {
      return false;
    }
  }).map(Number);
}

function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of processIds()) {
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
    } catch { /* ended meanwhile */ }
  }
  const found: number[] = [];
  const walk = (p: number) => { for (const c of children.get(p) ?? []) { found.push(c); walk(c); } };
  walk(root);
  return found;
}
