import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux build we run on). */
const TICKS_PER_SECOND = 100;

/** One process as /proc/<pid>/stat tells it, CPU in seconds. */
interface ProcessStat {
  pid: number;
  ppid: number;
  /** Its kernel name (`node`, `postgres`, `redis-server`, `npm start`, `sh`). */
  comm: string;
  /** user + system time of all its threads, the ended ones included. */
  own: number;
  /** user + system time of its ended children it waited for (cutime + cstime). */
  reaped: number;
}

function readStat(pid: number): ProcessStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // ended meanwhile
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    ppid: Number(fields[1]),
    comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    own: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
    reaped: (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND,
  };
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** One reading of a process tree: every process under the roots, by pid, and when it was taken. */
export interface TreeReading {
  at: number;
  processes: Map<number, ProcessStat & { label: string }>;
}

/**
 * The CPU of `roots` and every process under them (by parent pid), less `exclude` (a bench's own
 * Postgres session). Each process is labelled by `label` (its group in a breakdown). Linux only:
 * an empty reading elsewhere.
 */
export function readTree(
  roots: readonly number[],
  label: (pid: number, comm: string, cmdline: string) => string,
  exclude: ReadonlySet<number> = new Set(),
): TreeReading {
  const at = performance.now() / 1000;
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return { at, processes: new Map() };
  }
  const all = entries.flatMap((name) => readStat(Number(name)) ?? []);
  const children = new Map<number, ProcessStat[]>();
  for (const stat of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const processes: TreeReading['processes'] = new Map();
  const visit = (stat: ProcessStat) => {
    if (processes.has(stat.pid) || exclude.has(stat.pid)) return;
    processes.set(stat.pid, { ...stat, label: label(stat.pid, stat.comm, cmdline(stat.pid)) });
    for (const child of children.get(stat.pid) ?? []) visit(child);
  };
  for (const root of roots) {
    const stat = all.find((s) => s.pid === root);
    if (stat) visit(stat);
  }
  return { at, processes };
}

/**
 * Cores (CPU seconds per second) the tree used between two readings, in all and by label. A
 * process that ended meanwhile is counted through its parent's `reaped` time (Postgres' sessions
 * are the postmaster's children): what it used before the first reading is taken off, so the
 * ended process counts with its time inside the window, under the label `<parent's> (ended
 * children)`. A process started meanwhile counts whole.
 */
export function treeCores(
  from: TreeReading,
  to: TreeReading,
): { seconds: number; total: number; byLabel: Map<string, number> } {
  const seconds = to.at - from.at;
  const byLabel = new Map<string, number>();
  const add = (label: string, cpu: number) => byLabel.set(label, (byLabel.get(label) ?? 0) + cpu / seconds);
  for (const [pid, now] of to.processes) {
    const before = from.processes.get(pid);
    add(now.label, now.own - (before?.own ?? 0));
    add(`${now.label} (ended children)`, now.reaped - (before?.reaped ?? 0));
  }
  for (const [pid, before] of from.processes) {
    if (to.processes.has(pid)) continue;
    const parent = to.processes.get(before.ppid);
    add(`${parent?.label ?? before.label} (ended children)`, -before.own - before.reaped);
  }
  for (const [label, cores] of byLabel) if (Math.abs(cores) < 1e-9) byLabel.delete(label);
  const total = [...byLabel.values()].reduce((a, b) => a + b, 0);
  return { seconds, total, byLabel };
}

/**
 * CPU seconds each thread of process `pid` has used, by name: its main thread as `main`, others
 * by their kernel name with digits folded (`lf-localnet`, `ThreadPoolForeg`, `libuv-worker`,
 * `node` for V8's helpers). A thread that ended meanwhile drops out (its process's own time in
 * readTree keeps it). Empty when the process is gone or off Linux.
 */
export function processThreadCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const name =
      Number(tid) === pid
        ? 'main'
        : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+/g, '');
    byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
  }
  return byName;
}
