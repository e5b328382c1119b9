import { readFileSync } from 'node:fs';

/** The machine's CPU time counters (all cores), from /proc/stat; undefined off Linux. */
export interface CpuTimes {
  busy: number;
  stolen: number;
  idle: number;
}

export function cpuTimes(): CpuTimes | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    // cpu user nice system idle iowait irq softirq steal ...
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    if (steal === undefined) return undefined;
    return { busy: user! + nice! + system! + irq! + softirq!, stolen: steal, idle: idle! + iowait! };
  } catch {
    return undefined;
  }
}

/**
 * How the machine spent a phase, in percent of its CPU time: on a shared VM the hypervisor may
 * steal a large share (6-29% measured here), which makes runs hard to compare.
 */
export function describeCpu(from: CpuTimes | undefined, to: CpuTimes | undefined): string {
  if (!from || !to) return 'machine CPU: not available on this system';
  const busy = to.busy - from.busy;
  const stolen = to.stolen - from.stolen;
  const idle = to.idle - from.idle;
  const total = busy + stolen + idle || 1;
  const pct = (n: number) => `${((100 * n) / total).toFixed(0)}%`;
  return `machine CPU: ${pct(busy)} busy, ${pct(stolen)} stolen by the hypervisor, ${pct(idle)} idle`;
}
