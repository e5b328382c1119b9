import swagger from '@fastify/swagger';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
} from 'fastify';
import type { DependencyTracker } from '../app/read-cache.js';
import type { ApiDeps } from '../app/api-deps.js';
import type { ErrorBody } from './error-map.js';
import { registerDashboards } from './dashboards/dashboard.routes.js';
import { registerOperationsRoutes } from './operations.routes.js';
import { createLiveStreams, type LiveStreams } from './graphql/live-streams.js';
import { fastGraphqlAnswer, type GraphqlAnswer } from './graphql/fast-path.js';
import { createGraphqlResponseCache, type GraphqlResponseCache } from './graphql/response-cache.js';
import { createCachedReadsServer, type CachedReadsServer } from './cached-reads/cached-reads-server.js';
import { createGraphqlServer } from './graphql/yoga.js';
import { registerAvatarRoute } from './rest/avatars.route.js';
import { createFeedPages } from './rest/feed-pages.js';
import { registerRestRoutes } from './rest/routes.js';
import { trustProxyHops } from './trust-proxy.js';
import { BODY_LIMIT_BYTES, errorAnswer } from './error-response.js';
import { KEEP_ALIVE_TIMEOUT_MS } from './receive-limits.js';
import { recordRequest } from './request-record.js';
import { finishOpenApiDocument } from './openapi-document.js';

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const GRAPHQL_PATH = '/graphql';

export interface ServerOptions {
  /**
   * Mount bull-board at /admin/queues (default true). It holds the live BullMQ queues, so the
   * OpenAPI printer, which builds the routes without backing services, leaves it out.
   */
  queueBoard?: boolean;
  /**
   * Answer kept feed pages and GraphQL answers before Fastify (default true; see
   * cached-reads/cached-reads-server.ts). False sends every request through Fastify's routes, with
   * the same caches: the contract test compares the two.
   */
  cachedReadsFirst?: boolean;
}

export async function buildServer(deps: ApiDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  // Typed as the base logger so the instance is the plain FastifyInstance routes expect.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const feedPages = createFeedPages(deps);
  const graphqlAnswers = createGraphqlResponseCache(deps);
  // Kept feed pages and GraphQL answers are given before Fastify (cached-reads/).
  const cachedReads = createCachedReadsServer(deps, feedPages, graphqlAnswers, {
    first: options.cachedReadsFirst ?? true,
  });
  // Open event streams (GraphQL subscriptions and REST's GET /events/stream), counted per account.
  const streams = createLiveStreams(deps);
  const app: FastifyInstance = Fastify({
    loggerInstance,
    serverFactory: cachedReads.serverFactory,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // A request not received within REQUEST_RECEIVE_TIMEOUT_MS is answered 408 with our JSON body.
    clientErrorHandler: cachedReads.clientErrorHandler,
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
          'REST compatibility layer of the Social Posting Service API (docs/spec/social-posting-api.md).',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'lf_live_<40 base62 characters>' },
        },
      },
      security: [{ apiKey: [] }],
      // Paths carry /api/v1: the server is the origin.
      servers: [{ url: 'http://localhost:3000', description: 'the embedded defaults (npm start)' }],
    },
    transformObject: finishOpenApiDocument,
    // Only the /api/v1 routes belong in the document.
    transform: ({ schema, url }) => ({
      schema: { ...schema, hide: !url.startsWith('/api/v1') || url.endsWith('/openapi.json') },
      url,
    }),
  });

  // What a write changed is told by the code that made it (the write paths and stores, through
  // app/commit-notifier.ts, with keys naming what changed: app/change-signals.ts). Here only who
  // wrote is noted, before the answer leaves: a REST request that may have written (any method but
  // GET/HEAD/OPTIONS) and succeeded makes its account read past every cached entry computed before
  // it (read-your-writes, see app/read-cache.ts). GraphQL mutations note theirs in
  // graphql/response-cache.ts.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (
      request.viewer &&
      reply.statusCode < 400 &&
      !READ_ONLY_METHODS.has(request.method) &&
      request.routeOptions.url !== GRAPHQL_PATH
    ) {
      deps.changes.writes.record(request.viewer.accountId);
    }
    done(null, payload);
  });

  app.addHook('onResponse', (request, reply, done) => {
    recordRequest(deps, request.log, {
      method: request.method,
      url: request.url,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      elapsedMs: reply.elapsedTime,
    });
    done();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, body, headers } = errorAnswer(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.status(status).headers(headers).send(body);
  });

  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      error: 'not_found',
      message: `No route for ${request.method} ${request.url.split('?')[0]}`,
    } satisfies ErrorBody),
  );

  registerOperationsRoutes(app, deps);
  app.get('/api/v1/openapi.json', () => app.swagger());
  registerAvatarRoute(app, deps);

  await app.register(
    (api, _opts, done) => {
      registerRestRoutes(api, deps, feedPages, streams);
      done();
    },
    { prefix: '/api/v1' },
  );

  app.addHook('preClose', (done) => {
    cachedReads.close();
    done();
  });
  mountGraphql(app, deps, graphqlAnswers, cachedReads, streams);
  await registerDashboards(app, deps, { queueBoard: options.queueBoard ?? true });
  return app;
}

/** Yoga inside Fastify, as Yoga's Fastify guide does it; this keeps the graphql-http audits passing. */
function mountGraphql(
  app: FastifyInstance,
  deps: ApiDeps,
  answers: GraphqlResponseCache,
  cachedReads: Pick<CachedReadsServer, 'payloadOf'>,
  streams: LiveStreams,
): void {
  // Every subscription is admitted (counted, or refused) by the live streams' plugin when Yoga is
  // about to subscribe it, whatever its transport; the route then holds or frees its slot.
  const yoga = createGraphqlServer(deps, [answers.plugin, streams.plugin]);
  // No multipart parser: the schema takes no uploads, and a parser that handed Yoga the raw stream
  // let an anonymous client send an unbounded body. Fastify answers such a request 415 from its
  // content type alone, before reading the body or authenticating.
  // Subscriptions stream (SSE) until the client leaves; close() would wait for them forever. They
  // are cut as a client disconnect cuts them (Yoga ends the subscription); clients reconnect.
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  app.route({
    url: yoga.graphqlEndpoint,
    method: ['GET', 'POST', 'OPTIONS'],
    // A body read before the request was handed over (cached-reads/cached-graphql-reads.ts).
    preParsing: (request, _reply, payload, done) => done(null, cachedReads.payloadOf(request.raw, payload)),
    handler: async (req, reply) => {
      const execute = async (track?: DependencyTracker): Promise<GraphqlAnswer> => {
        const fast = await fastGraphqlAnswer(yoga, { req, reply, track });
        if (fast) return fast;
        try {
          return answerOf(await yoga.handleNodeRequestAndResponse(req, reply, { req, reply, track }));
        } catch (error) {
          streams.abandon(req);
          throw error;
        }
      };
      const served = await answers.serve(req, reply, execute);
      if (served.kind === 'answered') return reply;
      const answer = served.kind === 'executed' ? served.answer : await execute();
      const refusal = streams.settle(req, answer, reply.raw);
      if (refusal) {
        if (answer.body instanceof ReadableStream) void answer.body.cancel().catch(() => {});
        return reply.status(refusal.status).send(refusal.body);
      }
      for (const [name, value] of answer.headers) void reply.header(name, value);
      void reply.status(answer.status);
      return reply.send(answer.body);
    },
  });
}

/** Yoga's answer as headers and its body stream. */
function answerOf(response: Response): GraphqlAnswer {
  const headers: Array<[string, string]> = [];
  response.headers.forEach((value, name) => headers.push([name, value]));
  return { status: response.status, headers, body: response.body };
}
