import type { FastifyReply, FastifyRequest } from 'fastify';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { ApiDeps } from '../api-deps.js';
import type { GraphQLContext } from './context.js';
import { graphqlSchema } from './graphql-schema.js';

type ServerContext = { req: FastifyRequest; reply: FastifyReply };

export function createGraphqlServer(deps: ApiDeps): YogaServerInstance<ServerContext, GraphQLContext> {
  const log = deps.logger.child({ component: 'graphql' });
  return createYoga<ServerContext, GraphQLContext>({
    schema: graphqlSchema(),
    graphqlEndpoint: '/graphql',
    // Unexpected errors reach clients as "Unexpected error." and are logged here in full.
    maskedErrors: true,
    logging: {
      debug: (...args) => log.debug(args.map(String).join(' ')),
      info: (...args) => log.info(args.map(String).join(' ')),
      warn: (...args) => log.warn(args.map(String).join(' ')),
      error: (...args) =>
        log.error({ err: args.find((a) => a instanceof Error) }, args.map(String).join(' ')),
    },
    context: ({ req, reply }): GraphQLContext => ({ deps, viewer: null, req, reply }),
  });
}
