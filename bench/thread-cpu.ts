import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux build we run on). */
const TICKS_PER_SECOND = 100;

/** User + system ticks of a /proc stat: "pid (comm) state ... utime stime ...", comm may hold spaces and parentheses. */
function statTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU seconds of one process (user + system), 0 once it is gone. */
export function pidCpuSeconds(pid: number): number {
  try {
    return statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8')) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds each thread of this process has used, by name: the main thread as `main`, other
 * threads by their kernel name with digits folded (`ThreadPool`, `libuv-worker`, and `node` for
 * the localnet's worker and V8's helpers). Undefined off Linux.
 */
export function threadCpuSeconds(): Map<string, number> | undefined {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  const byName = new Map<string, number>();
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const ticks = statTicks(stat);
    const name =
      Number(tid) === process.pid
        ? 'main'
        : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+/g, '');
    byName.set(name, (byName.get(name) ?? 0) + ticks / TICKS_PER_SECOND);
  }
  return byName;
}

/**
 * CPU seconds every other process on the machine has used, by command name (`postgres`,
 * `redis-server`, `node` for the writer child...). A process that ends between two readings drops
 * out (its time is not counted). Undefined off Linux.
 */
export function processCpuSeconds(): Map<string, number> | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const byName = new Map<string, number>();
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    byName.set(name, (byName.get(name) ?? 0) + statTicks(stat) / TICKS_PER_SECOND);
  }
  return byName;
}

/** What each thread name used between two readings, in cores (CPU seconds per second). */
export function threadCores(
  from: Map<string, number> | undefined,
  to: Map<string, number> | undefined,
  seconds: number,
): Array<[string, number]> {
  if (!from || !to) return [];
  return [...to]
    .map(([name, cpu]): [string, number] => [name, (cpu - (from.get(name) ?? 0)) / seconds])
    .filter(([, cores]) => cores > 0)
    .sort((a, b) => b[1] - a[1]);
}
