import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ErrorBody } from './error-map.js';
import { registerOperationsRoutes, type OperationsDeps } from './operations.routes.js';
import { clientErrorResponse, toErrorResponse } from './error-response.js';
import { answerClientError, KEEP_ALIVE_TIMEOUT_MS, RECEIVE_LIMITS } from './receive-limits.js';

/**
 * A connection whose client has not taken an answer (every byte of it handed to the kernel) this
 * long after the answer was written is closed. Answers here are tens of kilobytes, taken in
 * milliseconds by a client that reads; one that sends requests (a pipelined run of /metrics) and
 * never reads would otherwise keep its connection and what waits to be sent on it for good (node's
 * keep-alive timer does not cut it: with Fastify's defaults it was still open after 100 s).
 */
export const HEALTH_ANSWER_TIMEOUT_MS = 10_000;

/**
 * The HTTP server of a process that runs no API (a worker or indexer alone): /healthz and
 * /metrics only, with the API's JSON errors, so a balancer, compose and Prometheus see every role.
 * The API server's receive limits apply: a request (headers and body) not received within
 * REQUEST_RECEIVE_TIMEOUT_MS is answered 408 and closed, idle keep-alive connections close after
 * KEEP_ALIVE_TIMEOUT_MS; and a client that has not taken an answer HEALTH_ANSWER_TIMEOUT_MS after
 * it was written is cut.
 */
export function buildHealthServer(deps: OperationsDeps & { logger: FastifyBaseLogger }): FastifyInstance {
  /** The latest request on each connection, so a late body is not answered twice. */
  const latest = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: RECEIVE_LIMITS.requestTimeout,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    http: RECEIVE_LIMITS,
    // What node refused before a route saw the whole request: our JSON error, then closed.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const last = latest.get(socket);
      // Only its body was late and a route already answered: a second answer would corrupt it.
      const answered = last !== undefined && !last.req.complete && last.res.headersSent;
      answerClientError(socket, clientErrorResponse(error), answered);
    },
  });
  app.addHook('onRequest', (request, reply, done) => {
    latest.set(request.raw.socket, { req: request.raw, res: reply.raw });
    done();
  });
  /** Connections with an answer still waiting for their client, each checked once its time is up. */
  const waiting = new WeakSet<Socket>();
  app.addHook('onResponse', (request, _reply, done) => {
    const socket = request.raw.socket;
    if (!socket.destroyed && socket.writableLength > 0 && !waiting.has(socket)) {
      waiting.add(socket);
      const check = () => {
        waiting.delete(socket);
        if (!socket.destroyed && socket.writableLength > 0) socket.destroy();
      };
      setTimeout(check, HEALTH_ANSWER_TIMEOUT_MS).unref();
    }
    done();
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
