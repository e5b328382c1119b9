/** One dependency check: resolves when the dependency answers, throws otherwise. */
export type Probe = () => Promise<unknown>;

export interface DependencyHealth {
  name: string;
  status: 'up' | 'down';
  /** Round-trip time of the probe, in milliseconds. */
  latencyMs: number;
  /** How the service was provided: external, embedded, shared, local. */
  source: string;
  error?: string;
}

export interface HealthReport {
  status: 'ok' | 'down';
  checkedAt: Date;
  dependencies: DependencyHealth[];
}

export interface HealthDeps {
  probes: ReadonlyArray<{ name: string; source: string; probe: Probe }>;
  /** A probe slower than this counts as down, so /healthz answers even when a server hangs. */
  timeoutMs: number;
  now?: () => Date;
}

/** Runs every probe at once; the service is `ok` only when every dependency is up. */
export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const dependencies = await Promise.all(
    deps.probes.map(async ({ name, source, probe }): Promise<DependencyHealth> => {
      const started = performance.now();
      try {
        await withTimeout(probe(), deps.timeoutMs);
        return { name, source, status: 'up', latencyMs: elapsed(started) };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return { name, source, status: 'down', latencyMs: elapsed(started), error: message || 'failed' };
      }
    }),
  );
  return {
    status: dependencies.every((d) => d.status === 'up') ? 'ok' : 'down',
    checkedAt: (deps.now ?? (() => new Date()))(),
    dependencies,
  };
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
