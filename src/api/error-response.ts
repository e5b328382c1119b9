import type { FastifyError } from 'fastify';
import { AppError } from '../domain/errors.js';
import { insufficientBalanceOf } from '../domain/ledger/insufficient-balance.js';
import { httpStatusOf, type ErrorBody } from './error-map.js';
import { usdNumber } from './http-views.js';

/** Request bodies are small JSON documents; anything larger is a mistake or an attack. */
export const BODY_LIMIT_BYTES = 64 * 1024;
/**
 * How long a request may take to arrive, from its first byte (or its connection's opening) to the
 * last byte of its body: ample for 64 KiB on any link, short enough that a client dripping a byte
 * at a time holds a connection for seconds, not forever. Answering takes as long as it takes (an
 * event stream, a paid write waiting for the chain): only receiving the request counts.
 */
export const REQUEST_RECEIVE_TIMEOUT_MS = 10_000;

/** Maps any thrown error to a status and a `{ error, message }` body; never leaks a stack. */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof AppError) {
    const body: ErrorBody & Record<string, unknown> = { error: error.code, message: error.message };
    // A 402 tells the client what it has and what it needed: USDC in dollars; the native token (a
    // swap) in base units, as strings of digits like amount_tokens.
    const refusal = insufficientBalanceOf(error);
    if (refusal?.currency === 'usdc') {
      body.balance_usd = usdNumber(refusal.available);
      body.required_usd = usdNumber(refusal.required);
    } else if (refusal) {
      body.balance_tokens = refusal.available.toString();
      body.required_tokens = refusal.required.toString();
    }
    // A refused close names what blocks it: `[{ status, count }]`.
    if (error.code === 'close_blocked' && Array.isArray(error.details.blockers)) {
      body.blockers = error.details.blockers;
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
  if (backingServiceDown(error)) {
    // Postgres or Redis restarting is the client's cue to retry (with its Idempotency-Key), not a
    // bug: 503 like every other 'unavailable', naming no host, port or socket path.
    return {
      status: 503,
      body: { error: 'unavailable', message: 'A backing service is unavailable; try again shortly' },
    };
  }
  return { status: 500, body: { error: 'internal', message: 'Internal server error' } };
}

/**
 * An error as every route answers it: toErrorResponse's status and body, and Retry-After when the
 * error says when to come back (429, and 503s that know). Fastify's error handler (server.ts) and
 * the cached reads (cached-reads/) both answer with it.
 */
export function errorAnswer(error: unknown): {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
} {
  const { status, body } = toErrorResponse(error);
  const headers: Record<string, string> = {};
  if (error instanceof AppError && typeof error.details.retryAfterSeconds === 'number') {
    headers['retry-after'] = String(error.details.retryAfterSeconds);
  }
  return { status, body, headers };
}

/**
 * The answer to a request node refused before any route saw all of it (the server's clientError):
 * one that did not arrive within REQUEST_RECEIVE_TIMEOUT_MS, headers too large, or bytes that are
 * not HTTP.
 */
export function clientErrorResponse(error: { code?: string }): { status: number; body: ErrorBody } {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      body: {
        error: 'request_timeout',
        message: `The request (headers and body) did not arrive within ${REQUEST_RECEIVE_TIMEOUT_MS / 1000} s`,
      },
    };
  }
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return {
      status: 431,
      body: { error: 'headers_too_large', message: 'The request headers are too large' },
    };
  }
  return { status: 400, body: { error: 'invalid_request', message: 'Malformed HTTP request' } };
}

/** Node's socket errors for a peer that is down or went away. */
const LOST_CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);
/**
 * Postgres SQLSTATEs of a server going away: class 08 (connection exception), 57P01 admin_shutdown
 * ("terminating connection due to unexpected postmaster exit" after a postmaster crash),
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, crash recovery).
 */
const POSTGRES_DOWN = /^(08[0-9A-Z]{3}|57P0[123])$/;

/** A lost or refused connection to Postgres or Redis (pg's own errors have no code). */
function backingServiceDown(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 3;
    depth++
  ) {
    if (typeof e.code === 'string' && (LOST_CONNECTION_CODES.has(e.code) || POSTGRES_DOWN.test(e.code)))
      return true;
    if (
      typeof e.message === 'string' &&
      /^Connection terminated( unexpectedly| due to connection timeout)?$/.test(e.message)
    )
      return true;
    e = e.cause as typeof e;
  }
  return false;
}
