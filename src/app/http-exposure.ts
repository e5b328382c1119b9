import type { Config } from '../config/index.js';
import type { HttpExposure } from './api-deps.js';

/**
 * What the HTTP server shows beyond API keys. Production is closed by default: no cross-origin
 * pages (the dashboards are same-origin), no GraphiQL; development lets any origin's page call
 * /graphql (a front end on its own dev server) and serves GraphiQL.
 */
export function httpExposureOf(config: Config): HttpExposure {
  const production = config.NODE_ENV === 'production';
  return {
    corsOrigins: config.CORS_ORIGINS ?? (production ? [] : ['*']),
    metricsToken: config.METRICS_TOKEN,
    graphiql: !production,
  };
}
