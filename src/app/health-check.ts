import type { Logger } from 'pino';
import { cachedHealthCheck } from '../domain/health/health-cache.js';
import { checkHealth, type HealthDeps, type HealthReport } from '../domain/health/health.service.js';
import type { Metrics } from '../observability/metrics.js';
import { redactUrls } from '../url-redaction.js';

/** A probe slower than this counts as down, so /healthz answers even when a server hangs. */
const HEALTH_TIMEOUT_MS = 2_000;
/**
 * A health report is answered again for this long instead of probing anew: /healthz and the
 * public GraphQL `health` field then cost at most four probes per interval however many callers
 * (or aliases in one query) ask. Shorter than any poller's period (compose, Prometheus: >= 5 s).
 */
const HEALTH_MAX_AGE_MS = 2_000;

/**
 * The process's health check over its dependencies' probes (built by the wiring, one per client):
 * cached for HEALTH_MAX_AGE_MS, counted in the metrics, and logged when a dependency goes down or
 * comes back.
 */
export function createHealthCheck(
  probes: HealthDeps['probes'],
  metrics: Pick<Metrics, 'recordHealth'>,
  logger: Logger,
): () => Promise<HealthReport> {
  // The probes' own errors name hosts and URLs, so clients see only a summary: the detail is
  // logged here, once when a dependency goes down (not on every probe while it stays down).
  const down = new Set<string>();
  const logHealthChanges = (report: HealthReport) => {
    for (const dependency of report.dependencies) {
      if (dependency.status === 'down' && !down.has(dependency.name)) {
        down.add(dependency.name);
        logger.warn(
          { dependency: dependency.name, latencyMs: dependency.latencyMs },
          `health: ${dependency.name} is down: ${redactUrls(dependency.detail ?? dependency.error ?? 'failed')}`,
        );
      } else if (dependency.status === 'up' && down.delete(dependency.name)) {
        logger.info({ dependency: dependency.name }, `health: ${dependency.name} is up again`);
      }
    }
  };
  return cachedHealthCheck(
    async () => {
      const report = await checkHealth({ probes, timeoutMs: HEALTH_TIMEOUT_MS });
      metrics.recordHealth(report);
      logHealthChanges(report);
      return report;
    },
    { maxAgeMs: HEALTH_MAX_AGE_MS },
  );
}
