import type { Logger } from 'pino';
import type { HealthReport } from '../domain/health/health.service.js';
import type { Metrics } from './metrics.js';

/** What the transports need from the composition root (src/app). */
export interface ApiDeps {
  logger: Logger;
  metrics: Metrics;
  checkHealth(): Promise<HealthReport>;
}
