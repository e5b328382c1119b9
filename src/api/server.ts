import type { ServerResponse } from 'node:http';
import swagger from '@fastify/swagger';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
} from 'fastify';
import { AppError } from '../domain/errors.js';
import type { ApiDeps } from './api-deps.js';
import { httpStatusOf, type ErrorBody } from './error-map.js';
import { registerDashboards } from './dashboards/dashboard.routes.js';
import { createGraphqlResponseCache } from './graphql/response-cache.js';
import { createGraphqlServer } from './graphql/yoga.js';
import { registerAvatarRoute } from './rest/avatars.route.js';
import { registerRestRoutes } from './rest/routes.js';
import { trustProxyHops } from './trust-proxy.js';
import { usdNumber } from './rest/views.js';

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const GRAPHQL_PATH = '/graphql';

/** Request bodies are small JSON documents; anything larger is a mistake or an attack. */
const BODY_LIMIT_BYTES = 64 * 1024;

export interface ServerOptions {
  /**
   * Mount bull-board at /admin/queues (default true). It holds the live BullMQ queues, so the
   * OpenAPI printer, which builds the routes without backing services, leaves it out.
   */
  queueBoard?: boolean;
}

export async function buildServer(deps: ApiDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  // Typed as the base logger so the instance is the plain FastifyInstance routes expect.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const app: FastifyInstance = Fastify({
    loggerInstance,
    // One readable line per request (below) instead of Fastify's two JSON lines.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    // The client IP, protocol and host come from X-Forwarded-* only through this many proxies of
    // ours (0: never); `true` would let any client pick its IP and walk past per-IP limits.
    trustProxy: trustProxyHops(deps.trustProxyHops),
    ajv: {
      // Bodies are taken as sent: "123" is not a number, and an unknown field is an error rather
      // than silently dropped.
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false },
    },
    // "display_name must NOT have more than 50 characters": the field named, in the body's terms.
    schemaErrorFormatter: (errors, dataVar) => {
      const first = errors[0];
      const field = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') || dataVar;
      const extra =
        first?.keyword === 'additionalProperties'
          ? ` (${String((first.params as { additionalProperty?: string }).additionalProperty)})`
          : '';
      return new Error(`${field} ${first?.message ?? 'is invalid'}${extra}`);
    },
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Ledgerfeed API',
        version: '1.0.0',
        description:
          'REST compatibility layer of the Social Posting Service API (spec/social-posting-api.md).',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'lf_live_<40 base62 characters>' },
        },
      },
      security: [{ apiKey: [] }],
    },
    // Only the /api/v1 routes belong in the document.
    transform: ({ schema, url }) => ({
      schema: { ...schema, hide: !url.startsWith('/api/v1') || url.endsWith('/openapi.json') },
      url,
    }),
  });

  // A request that may have written (any REST method but GET/HEAD/OPTIONS; GraphQL mutations tell
  // their own, see graphql/response-cache.ts) empties the read caches before its answer leaves, so
  // its client reads what it wrote. Identity changes (a revoked key, a new handle) are told by the
  // stores themselves (app/identity-stores.ts): a post must not cost the next request a key lookup.
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (!READ_ONLY_METHODS.has(request.method) && request.routeOptions.url !== GRAPHQL_PATH) {
      deps.changes.changed('content');
    }
    done(null, payload);
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    deps.metrics.httpRequests.observe(
      { method: request.method, route, status: String(reply.statusCode) },
      seconds,
    );
    if (route !== '/healthz' && route !== '/metrics') {
      request.log.info(
        `${request.method} ${request.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)}ms`,
      );
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, body } = toErrorResponse(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (error instanceof AppError && typeof error.details.retryAfterSeconds === 'number') {
      void reply.header('retry-after', String(error.details.retryAfterSeconds));
    }
    return reply.status(status).send(body);
  });

  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      error: 'not_found',
      message: `No route for ${request.method} ${request.url.split('?')[0]}`,
    } satisfies ErrorBody),
  );

  app.get('/healthz', async (_request, reply) => {
    const report = await deps.checkHealth();
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

  app.get('/metrics', async (_request, reply) =>
    reply
      .header('content-type', deps.metrics.registry.contentType)
      .send(await deps.metrics.registry.metrics()),
  );

  app.get('/api/v1/openapi.json', () => app.swagger());
  registerAvatarRoute(app, deps);

  await app.register(
    (api, _opts, done) => {
      registerRestRoutes(api, deps);
      done();
    },
    { prefix: '/api/v1' },
  );

  mountGraphql(app, deps);
  await registerDashboards(app, deps, { queueBoard: options.queueBoard ?? true });
  return app;
}

/** Yoga inside Fastify, as Yoga's Fastify guide does it; this keeps the graphql-http audits passing. */
function mountGraphql(app: FastifyInstance, deps: ApiDeps): void {
  const answers = createGraphqlResponseCache(deps);
  const yoga = createGraphqlServer(deps, [answers.plugin]);
  // Yoga parses multipart itself; Fastify must hand it the raw stream.
  app.addContentTypeParser('multipart/form-data', {}, (_request, _payload, done) => done(null));
  // Subscriptions stream (SSE) until the client leaves; close() would wait for them forever. They
  // are cut as a client disconnect cuts them (Yoga ends the subscription); clients reconnect.
  const streams = new Set<ServerResponse>();
  app.addHook('preClose', (done) => {
    for (const stream of streams) stream.destroy();
    done();
  });
  app.route({
    url: yoga.graphqlEndpoint,
    method: ['GET', 'POST', 'OPTIONS'],
    handler: async (req, reply) => {
      const key = answers.keyOf(req);
      if (key !== undefined && (await answers.answer(key, req, reply))) return reply;
      const version = answers.version();
      const response = await yoga.handleNodeRequestAndResponse(req, reply, { req, reply });
      response.headers.forEach((value, key) => {
        void reply.header(key, value);
      });
      void reply.status(response.status);
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
        const raw = reply.raw;
        streams.add(raw);
        raw.once('close', () => streams.delete(raw));
      }
      const kept = key === undefined ? undefined : await answers.remember(key, version, req, response);
      return reply.send(kept ?? response.body);
    },
  });
}

/** Maps any thrown error to a status and a `{ error, message }` body; never leaks a stack. */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof AppError) {
    const body: ErrorBody & Record<string, unknown> = { error: error.code, message: error.message };
    // The write path's 402 tells the client what it has and what it needed, in dollars.
    if (error.code === 'insufficient_balance' && typeof error.details.balanceMicro === 'string') {
      body.balance_usd = usdNumber(BigInt(error.details.balanceMicro));
      body.required_usd = usdNumber(BigInt(String(error.details.requiredMicro)));
    }
    // Its native variant (a swap): token base units, as strings of digits like amount_tokens.
    if (error.code === 'insufficient_balance' && typeof error.details.balanceTokens === 'string') {
      body.balance_tokens = error.details.balanceTokens;
      body.required_tokens = String(error.details.requiredTokens);
    }
    return { status: httpStatusOf[error.code], body };
  }
  const fastifyError = error as Partial<FastifyError>;
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = fastifyError.code;
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return {
        status: 415,
        body: { error: 'unsupported_media_type', message: 'Send the body as application/json' },
      };
    }
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return {
        status: 413,
        body: { error: 'payload_too_large', message: `Request body exceeds ${BODY_LIMIT_BYTES} bytes` },
      };
    }
    return { status, body: { error: 'invalid_request', message: fastifyError.message ?? 'Invalid request' } };
  }
  return { status: 500, body: { error: 'internal', message: 'Internal server error' } };
}
