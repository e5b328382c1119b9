import type { HealthReport } from './health.service.js';

export interface HealthCacheOptions {
  /** A report younger than this is answered again instead of probing (milliseconds). */
  maxAgeMs: number;
  /** Milliseconds on a monotonic clock; performance.now() unless a test gives its own. */
  now?: () => number;
}

/**
 * `check`, run at most once per `maxAgeMs` however many callers ask: a caller within that window
 * gets the last report, and callers arriving while a run is under way share it.
 *
 * Every run probes Postgres, Redis, ClickHouse and the RPC. `/healthz` and the GraphQL `health`
 * field are public, and one GraphQL request may select `health` thousands of times under
 * aliases; without this, one anonymous request drained the Postgres pool and held every other
 * request behind its probes (issue 20).
 */
export function cachedHealthCheck(
  check: () => Promise<HealthReport>,
  options: HealthCacheOptions,
): () => Promise<HealthReport> {
  const now = options.now ?? (() => performance.now());
  let last: { report: HealthReport; at: number } | undefined;
  let running: Promise<HealthReport> | undefined;
  return () => {
    if (last && now() - last.at < options.maxAgeMs) return Promise.resolve(last.report);
    running ??= check()
      .then((report) => {
        // Aged from when the run ended: a run that waited on a probe's timeout is not stale at birth.
        last = { report, at: now() };
        return report;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
