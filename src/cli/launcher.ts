/**
 * The processes that launched this one only to run it: `npx baton …` is `npm exec`, then `sh -c`, then
 * node. A signal sent to the pid a shell or service manager knows (`kill $!`, a pidfile, `docker stop`)
 * reaches `npm exec`, which ends without passing it on, and leaves node running on its own. So the
 * daemon watches the launchers it was started by, and stops as on SIGTERM when one of them is gone.
 * Linux only (it reads /proc).
 */
import fs from 'node:fs';

interface Launcher { pid: number; started: string; what: string }

/** A process's parent and start time (in clock ticks since boot: a pid used again has another). */
function stat(pid: number): { ppid: number; started: string } | undefined {
  try {
    // The command name is in parentheses and may hold spaces: the fields after it are split.
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), started: fields[19]! };
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** npm's own processes (npm exec, npx, npm run), and the `sh -c` that npm starts a bin with. */
function isLauncher(pid: number, depth = 0): boolean {
  // npm sets its process title ("npm exec baton agent run"), which /proc shows as one argument.
  const words = commandLine(pid).join(' ').split(/\s+/).slice(0, 3).map((w) => w.split('/').at(-1) ?? w);
  if (words[0] === 'npm' || words[0] === 'npx') return true;
  if ((words[0] === 'node' || words[0] === 'nodejs') && /^(npm|npx)(-cli\.js)?$/.test(words[1] ?? '')) return true;
  const parent = stat(pid)?.ppid ?? 0;
  return depth === 0 && (words[0] === 'sh' || words[0] === 'bash') && words[1] === '-c' && parent > 1 && isLauncher(parent, 1);
}

/** This process's launchers, nearest first: its parent and grandparents while they are npm's. */
export function launchers(): Launcher[] {
  const found: Launcher[] = [];
  for (let pid = process.ppid; pid > 1 && found.length < 4;) {
    const info = stat(pid);
    if (!info || !isLauncher(pid)) break;
    found.push({ pid, started: info.started, what: commandLine(pid).join(' ').slice(0, 80) });
    pid = info.ppid;
  }
  return found;
}

/**
 * Calls `gone` once, when a launcher of this process has ended. Returns what stops the watch. Checks
 * every second, without keeping the process alive. A process started otherwise (by a shell, a service
 * manager, a container's init) has no launcher to watch: its parent may end without ending it (nohup).
 */
export function whenLauncherEnds(gone: (launcher: { pid: number; what: string }) => void): () => void {
  const watched = fs.existsSync('/proc/self/stat') ? launchers() : [];
  if (watched.length === 0) return () => undefined;
  const timer = setInterval(() => {
    const ended = watched.find((l) => stat(l.pid)?.started !== l.started);
    if (!ended) return;
    clearInterval(timer);
    gone(ended);
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
