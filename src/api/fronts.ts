import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ApiDeps } from '../app/api-deps.js';
import { createGraphqlFront, type HandOver } from './graphql/graphql-front.js';
import type { GraphqlResponseCache } from './graphql/response-cache.js';
import { createFeedFront } from './rest/feed-front.js';
import type { FeedPages } from './rest/feed-pages.js';

/** Fastify's default, set here because the server is ours (serverFactory). */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

export interface Fronts {
  /** Fastify's serverFactory: a node:http server where the fronts see each request first. */
  serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => Server;
  /**
   * The body a front read before handing the request to Fastify, as the payload the route parses
   * (a preParsing hook); the request's own stream otherwise.
   */
  payloadOf: <P extends Readable>(req: IncomingMessage, payload: P) => P | Readable;
  /** Called when the server starts closing: from then on Fastify answers everything. */
  close: () => void;
}

/**
 * The answers kept by the read caches (feed pages, GraphQL reads) given before Fastify: see
 * rest/feed-front.ts and graphql/graphql-front.ts for why and for what each takes. Everything
 * else, and whatever a front hands over, is Fastify's.
 */
export function createFronts(deps: ApiDeps, feedPages: FeedPages, answers: GraphqlResponseCache): Fronts {
  const feed = createFeedFront(deps, feedPages);
  const graphql = createGraphqlFront(deps, answers);
  const readBodies = new WeakMap<IncomingMessage, Buffer>();
  return {
    serverFactory: (handler) => {
      const handOver: HandOver = (req, res, body) => {
        if (body) readBodies.set(req, body);
        handler(req, res);
      };
      const server = createServer((req, res) => {
        if (!feed.take(req, res) && !graphql.take(req, res, handOver)) handler(req, res);
      });
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = 0; // Fastify's default: no limit of its own
      return server;
    },
    payloadOf: <P extends Readable>(req: IncomingMessage, payload: P): P | Readable => {
      const body = readBodies.get(req);
      return body ? Readable.from([body]) : payload;
    },
    close: () => {
      feed.close();
      graphql.close();
    },
  };
}
