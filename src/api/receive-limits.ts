import { STATUS_CODES, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorBody } from './error-map.js';
import { REQUEST_RECEIVE_TIMEOUT_MS } from './error-response.js';

/**
 * The receive limits every HTTP server of ours applies (the API's, under Fastify, and the health
 * server of a process without one): a request whose headers and body have not all arrived within
 * REQUEST_RECEIVE_TIMEOUT_MS is refused through node's clientError (answerClientError below), and
 * one received whole is never cut, however long its answer takes.
 */

/** Fastify's default, set by hand where the server is ours (serverFactory) and on the health server. */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/**
 * How often node looks for requests past REQUEST_RECEIVE_TIMEOUT_MS (its default, 30 s, would let
 * one take up to 40 s).
 */
const RECEIVE_CHECK_EVERY_MS = 1_000;

/**
 * node:http's options for those limits. Fastify sets its own `requestTimeout` on the server it
 * creates after creating it: a Fastify server given these as `http` takes `requestTimeout` at the
 * top level too.
 */
export const RECEIVE_LIMITS = {
  requestTimeout: REQUEST_RECEIVE_TIMEOUT_MS,
  headersTimeout: REQUEST_RECEIVE_TIMEOUT_MS,
  connectionsCheckingInterval: RECEIVE_CHECK_EVERY_MS,
} as const satisfies ServerOptions;

/**
 * What a clientError handler does with a request node refused before a route saw all of it: our
 * JSON error answer written on the socket (unless `answered`: a route already began answering, and
 * a second answer would corrupt that one), then the connection closed. Destroying the socket, as
 * node does without a listener, still lets what was written leave first.
 */
export function answerClientError(
  socket: Socket,
  { status, body }: { status: number; body: ErrorBody },
  answered: boolean,
): void {
  if (socket.writable && !answered) {
    const text = JSON.stringify(body);
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}
