/** CPU seconds used so far by every Postgres process on this machine (from /proc; Linux only). */
import fs from 'node:fs';

export function postgresCpuSeconds(): number {
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
