import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { ApiDeps } from '../../app/api-deps.js';
import { clientErrorResponse } from '../error-response.js';
import type { GraphqlResponseCache } from '../graphql/response-cache.js';
import { answerClientError, KEEP_ALIVE_TIMEOUT_MS, RECEIVE_LIMITS } from '../receive-limits.js';
import { recordRequest } from '../request-record.js';
import type { FeedPages } from '../rest/feed-pages.js';
import { createCachedFeedReads } from './cached-feed-reads.js';
import { createCachedGraphqlReads, type HandOver } from './cached-graphql-reads.js';

export interface CachedReadsServer {
  /** Fastify's serverFactory: a node:http server where the cached reads see each request first. */
  serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => Server;
  /**
   * The body read here before handing the request to Fastify, as the payload the route parses
   * (a preParsing hook); the request's own stream otherwise.
   */
  payloadOf: <P extends Readable>(req: IncomingMessage, payload: P) => P | Readable;
  /** Called when the server starts closing: from then on Fastify answers everything. */
  close: () => void;
  /**
   * Fastify's clientErrorHandler (node's clientError) for this server: what node refused before a
   * route saw the whole request, answered with our JSON error body, and the connection closed.
   */
  clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => void;
}

/**
 * The node:http server under Fastify, which answers the reads its caches keep before Fastify sees
 * them: kept feed pages (cached-feed-reads.ts) and kept GraphQL answers (cached-graphql-reads.ts).
 *
 * Why a second way in: a cache hit is most of what clients ask, and Fastify's request lifecycle
 * (routing, a request and a reply object, hooks) costs about as much as the hit itself. Answered
 * from Fastify's first onRequest hook instead (same cache, same code, reply hijacked), REST latest
 * hits fell to 47 % of a plain node:http server from 70 % here with nothing written, and to 10.5 %
 * from 12.9 % under 100 paid posts/s + 300 likes/s (medians of three alternating runs, 2026-11-28,
 * docs/benchmarks.md): more than the 10 % we would trade for one way in. What the two ways share is
 * one implementation each of admission (admission.ts: 401, 403, 429 with RateLimit headers), error
 * answers (error-response.ts), metrics and the log line (request-record.ts);
 * test/cached-reads-contract.test.ts runs every cached route both ways and compares the answers.
 *
 * Everything else, whatever is handed over, and everything once the server closes, is Fastify's.
 * `first: false` hands every request to Fastify (the contract test's other way).
 */
export function createCachedReadsServer(
  deps: ApiDeps,
  feedPages: FeedPages,
  answers: GraphqlResponseCache,
  { first = true }: { first?: boolean } = {},
): CachedReadsServer {
  const feed = createCachedFeedReads(deps, feedPages);
  const graphql = createCachedGraphqlReads(deps, answers);
  const readBodies = new WeakMap<IncomingMessage, Buffer>();
  /** The latest request on each connection and its answer, with when it began (performance.now). */
  const latest = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse; started: number }>();
  return {
    serverFactory: (handler) => {
      const handOver: HandOver = (req, res, body) => {
        if (body) readBodies.set(req, body);
        handler(req, res);
      };
      const server = createServer(
        {
          // Node answers a request (headers and body) not received in time through clientError,
          // below; one received whole is never cut, however long its answer takes.
          ...RECEIVE_LIMITS,
        },
        (req, res) => {
          latest.set(req.socket, { req, res, started: performance.now() });
          if (!first || (!feed.take(req, res) && !graphql.take(req, res, handOver))) handler(req, res);
        },
      );
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
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
    clientErrorHandler: (error, socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const { status, body } = clientErrorResponse(error);
      // The request node was receiving, if it had handed it over (only its body was late); not
      // the connection's previous request, received whole.
      const last = latest.get(socket);
      const inFlight = last && !last.req.complete ? last : undefined;
      // A route may have begun answering before the body's end (a refused content type, a body
      // over the limit): a second answer would corrupt that one, so the connection is only closed.
      const answered = inFlight?.res.headersSent === true;
      answerClientError(socket, { status, body }, answered);
      if (answered) return;
      recordRequest(deps, deps.logger, {
        method: inFlight?.req.method ?? '-',
        url: inFlight?.req.url ?? '(request line or headers not received)',
        route: 'unmatched',
        status,
        elapsedMs: inFlight ? performance.now() - inFlight.started : 0,
      });
    },
  };
}
