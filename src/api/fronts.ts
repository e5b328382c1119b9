import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { ApiDeps } from '../app/api-deps.js';
import { clientErrorResponse, REQUEST_RECEIVE_TIMEOUT_MS } from './error-response.js';
import { createGraphqlFront, type HandOver } from './graphql/graphql-front.js';
import type { GraphqlResponseCache } from './graphql/response-cache.js';
import { recordRequest } from './request-record.js';
import { createFeedFront } from './rest/feed-front.js';
import type { FeedPages } from './rest/feed-pages.js';

/** Fastify's default, set here because the server is ours (serverFactory). */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/**
 * How often node looks for requests past REQUEST_RECEIVE_TIMEOUT_MS (its default, 30 s, would let
 * one take up to 40 s).
 */
const RECEIVE_CHECK_EVERY_MS = 1_000;

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
  /**
   * Fastify's clientErrorHandler (node's clientError) for this server: what node refused before a
   * route saw the whole request, answered with our JSON error body, and the connection closed.
   */
  clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => void;
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
          requestTimeout: REQUEST_RECEIVE_TIMEOUT_MS,
          headersTimeout: REQUEST_RECEIVE_TIMEOUT_MS,
          connectionsCheckingInterval: RECEIVE_CHECK_EVERY_MS,
        },
        (req, res) => {
          latest.set(req.socket, { req, res, started: performance.now() });
          if (!feed.take(req, res) && !graphql.take(req, res, handOver)) handler(req, res);
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
      if (socket.writable && !answered) {
        const text = JSON.stringify(body);
        socket.write(
          `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
        );
      }
      // As node does without a listener: what was written leaves before the connection closes.
      socket.destroy();
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
