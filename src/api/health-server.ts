import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ErrorBody } from './error-map.js';
import { registerOperationsRoutes, type OperationsDeps } from './operations.routes.js';
import { toErrorResponse } from './error-response.js';

/**
 * The HTTP server of a process that runs no API (a worker or indexer alone): /healthz and
 * /metrics only, with the API's JSON errors, so a balancer, compose and Prometheus see every role.
 */
export function buildHealthServer(deps: OperationsDeps & { logger: FastifyBaseLogger }): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setErrorHandler((error, request, reply) => {
    const { status, body } = toErrorResponse(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.status(status).send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      error: 'not_found',
      message: `${request.method} ${request.url.split('?')[0]}: this process serves /healthz and /metrics only (no api role)`,
    } satisfies ErrorBody),
  );
  registerOperationsRoutes(app, deps);
  return app;
}
