import type { ApiDeps } from '../app/api-deps.js';

interface RequestLog {
  info(message: string): void;
  /** pino's level name (Fastify's logger type does not carry isLevelEnabled). */
  level: string;
}

const INFO_AND_BELOW = new Set(['trace', 'debug', 'info']);

/**
 * A download link's signature is its credential (POST /reports/{id}/file-link): the log line keeps
 * the path and the expiry and hides the signature, so reading the logs opens no file.
 */
const LINK_SIGNATURE = /([?&]signature=)[^&]*/gi;

/**
 * What every answered request leaves: its latency in `ledgerfeed_http_request_duration_seconds`
 * (by method, route pattern and status) and one readable log line at info, except for the probes
 * and scrapes that would drown the others. The line is not even built when info is off.
 */
export function recordRequest(
  deps: Pick<ApiDeps, 'metrics'>,
  log: RequestLog,
  answered: { method: string; url: string; route: string; status: number; elapsedMs: number },
): void {
  const { method, url, route, status, elapsedMs } = answered;
  deps.metrics.httpRequests.observe({ method, route, status: String(status) }, elapsedMs / 1000);
  if (route !== '/healthz' && route !== '/metrics' && INFO_AND_BELOW.has(log.level)) {
    log.info(`${method} ${url.replace(LINK_SIGNATURE, '$1***')} ${status} ${elapsedMs.toFixed(1)}ms`);
  }
}
