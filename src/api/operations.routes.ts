import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../app/api-deps.js';
import { AppError } from '../domain/errors.js';
import { publicHealthReport } from '../domain/health/health.service.js';

/** What /healthz and /metrics need: every role's process has it, with or without the API. */
export type OperationsDeps = Pick<ApiDeps, 'checkHealth' | 'metrics' | 'exposure'>;

/**
 * /healthz and /metrics: served by the API's server, and by the health server of a process
 * without the API role (a worker or indexer on HEALTH_PORT), so every role can be probed and
 * scraped.
 */
export function registerOperationsRoutes(app: FastifyInstance, deps: OperationsDeps): void {
  // Public (load balancers and compose probe it without a key): a cached report
  // (app/health-check.ts), and each failure only summarised, since probe errors name internal hosts
  // and URLs.
  app.get('/healthz', async (_request, reply) => {
    const report = publicHealthReport(await deps.checkHealth());
    return reply.status(report.status === 'ok' ? 200 : 503).send({
      status: report.status,
      checked_at: report.checkedAt.toISOString(),
      dependencies: Object.fromEntries(
        report.dependencies.map((d) => [
          d.name,
          {
            status: d.status,
            latency_ms: d.latencyMs,
            source: d.source,
            ...(d.error ? { error: d.error } : {}),
          },
        ]),
      ),
    });
  });

  app.get('/metrics', async (request, reply) => {
    checkMetricsAccess(request, deps.exposure.metricsToken);
    return reply
      .header('content-type', deps.metrics.registry.contentType)
      .send(await deps.metrics.registry.metrics());
  });
}

/**
 * /metrics shows request counts, queue depths and the backing services' state: not for anyone.
 * With METRICS_TOKEN set it asks every client for `Authorization: Bearer <token>`. Without one it
 * answers only a client on this machine that came through no proxy: the socket's own peer address
 * (never X-Forwarded-For, which a client writes), and no Forwarded/X-Forwarded-For header, since a
 * reverse proxy on the same host connects from loopback on every client's behalf.
 */
function checkMetricsAccess(request: FastifyRequest, token: string | undefined): void {
  if (token !== undefined) {
    const presented = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization?.trim() ?? '')?.[1] ?? '';
    const expected = Buffer.from(token);
    const given = Buffer.from(presented);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AppError('unauthorized', 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>');
    }
    return;
  }
  const peer = request.socket.remoteAddress ?? '';
  const loopback = peer === '::1' || peer.startsWith('127.') || peer.startsWith('::ffff:127.');
  const proxied = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined;
  if (!loopback || proxied) {
    throw new AppError(
      'forbidden',
      '/metrics answers clients on this machine only; set METRICS_TOKEN to scrape it from elsewhere',
    );
  }
}
