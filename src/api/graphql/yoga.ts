import type { FastifyReply, FastifyRequest } from 'fastify';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { getOperationAST, OperationTypeNode, type ExecutionArgs } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance, type YogaServerOptions } from 'graphql-yoga';
import type { DependencyTracker } from '../../app/read-cache.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { createContext, type GraphQLContext } from './context.js';
import { isClientError, maskError } from './errors.js';
import { graphqlSchema } from './graphql-schema.js';
import { queryLimitsPlugin } from './query-limits.js';

/** `track`: where the resolvers record what they read, when the answer may be cached. */
type ServerContext = { req: FastifyRequest; reply: FastifyReply; track?: DependencyTracker | undefined };

export function createGraphqlServer(
  deps: ApiDeps,
  plugins: Plugin[] = [],
): YogaServerInstance<ServerContext, GraphQLContext> {
  const log = deps.logger.child({ component: 'graphql' });
  return createYoga<ServerContext, GraphQLContext>({
    schema: graphqlSchema(),
    graphqlEndpoint: '/graphql',
    // Unexpected errors reach clients as "Unexpected error." and are logged here in full; service
    // errors (AppError) are for the client and pass with their message and code.
    maskedErrors: { maskError },
    logging: {
      debug: (...args) => log.debug(args.map(String).join(' ')),
      info: (...args) => log.info(args.map(String).join(' ')),
      warn: (...args) => log.warn(args.map(String).join(' ')),
      error: (...args) => {
        const err = args.find((a) => a instanceof Error);
        // Yoga logs every error it rewrites; a bad input or a rate limit is not a server fault.
        if (isClientError(err)) log.debug({ err }, args.map(String).join(' '));
        else log.error({ err }, args.map(String).join(' '));
      },
    },
    context: ({ req, reply, track }) => createContext(deps, req, reply, track),
    // The schema has no uploads: no multipart parser, so no body is read beyond Fastify's limit.
    multipart: false,
    // The GraphiQL page is a development tool; production answers browsers with plain GraphQL.
    graphiql: deps.exposure.graphiql,
    cors: corsPolicy(deps.exposure.corsOrigins),
    // Query limits run with the other validation rules (an operation over them never executes),
    // and each operation spends its rate-limit budget by its cost before it executes.
    plugins: [
      queryLimitsPlugin(),
      // Compiled execution (graphql-jit) of queries; measured in docs/benchmarks.md (GraphQL miss).
      useGraphQlJit({}, { enableIf: isQuery }),
      ...plugins,
    ],
  });
}

/** Compiled execution for queries: mutations and subscriptions keep graphql-js. */
function isQuery(args: ExecutionArgs): boolean {
  return getOperationAST(args.document, args.operationName)?.operation === OperationTypeNode.QUERY;
}

/**
 * Only listed origins get CORS headers (Yoga's default reflects any origin). Never with
 * credentials: the API authenticates by bearer key, which a page sends explicitly; a cookie of
 * ours (the operator dashboards' session) must never ride along on another site's request.
 */
function corsPolicy(origins: readonly string[]): YogaServerOptions<ServerContext, GraphQLContext>['cors'] {
  if (origins.length === 0) return false;
  const any = origins.includes('*');
  return (request) => {
    const origin = request.headers.get('origin');
    if (origin === null || !(any || origins.includes(origin))) return false;
    return { origin: [origin], credentials: false, methods: ['GET', 'POST', 'OPTIONS'] };
  };
}
