/** One dependency check: resolves when the dependency answers, throws otherwise. */
export type Probe = () => Promise<unknown>;

export interface DependencyHealth {
  name: string;
  /** `not_configured`: this process runs without it on purpose (an api without ClickHouse). */
  status: 'up' | 'down' | 'not_configured';
  /** Round-trip time of the probe, in milliseconds. */
  latencyMs: number;
  /** How the service was provided: external, embedded, shared, local. */
  source: string;
  /**
   * Why it is down, in words safe for anyone (a timeout, or that the probe failed): errors of
   * database and RPC clients name hosts, ports, users and URLs, which a public endpoint must not.
   */
  error?: string;
  /** The probe's own error message, for the log and operators (admin, finance) only. */
  detail?: string;
}

export interface HealthReport {
  /** `draining`: the process is stopping (see `reportDraining`), whatever its dependencies say. */
  status: 'ok' | 'down' | 'draining';
  checkedAt: Date;
  dependencies: DependencyHealth[];
}

export interface HealthDeps {
  /** A dependency without a probe is not configured here: reported, never counted as down. */
  probes: ReadonlyArray<{ name: string; source: string; probe: Probe | undefined }>;
  /** A probe slower than this counts as down, so /healthz answers even when a server hangs. */
  timeoutMs: number;
  now?: () => Date;
}

/** Runs every probe at once; the service is `ok` only when every dependency is up. */
export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const dependencies = await Promise.all(
    deps.probes.map(async ({ name, source, probe }): Promise<DependencyHealth> => {
      if (!probe) return { name, source, status: 'not_configured', latencyMs: 0 };
      const started = performance.now();
      try {
        await withTimeout(probe(), deps.timeoutMs);
        return { name, source, status: 'up', latencyMs: elapsed(started) };
      } catch (error) {
        const detail = (error instanceof Error ? error.message : String(error)) || 'failed';
        const summary = error instanceof ProbeTimeout ? detail : 'probe failed';
        return { name, source, status: 'down', latencyMs: elapsed(started), error: summary, detail };
      }
    }),
  );
  return {
    status: dependencies.every((d) => d.status !== 'down') ? 'ok' : 'down',
    checkedAt: (deps.now ?? (() => new Date()))(),
    dependencies,
  };
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

/** The probe's own timeout: its message names nothing but the limit, so it is safe to show. */
class ProbeTimeout extends Error {}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The report as anyone may see it: status and latency of each dependency, no error detail. */
export function publicHealthReport(report: HealthReport): HealthReport {
  return {
    ...report,
    dependencies: report.dependencies.map(({ detail: _detail, ...shown }) => shown),
  };
}

/**
 * `check`, reporting `draining` once `draining()` is true: from a stop's first signal, so that a
 * load balancer probing /healthz (503 for anything but `ok`) sends nothing more while the server
 * still finishes the requests it has. The dependencies are still probed and shown.
 */
export function reportDraining(
  check: () => Promise<HealthReport>,
  draining: () => boolean,
): () => Promise<HealthReport> {
  return async () => {
    const report = await check();
    return draining() ? { ...report, status: 'draining' } : report;
  };
}
