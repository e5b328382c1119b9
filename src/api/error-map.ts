import type { ErrorCode } from '../domain/errors.js';

/** The one table from a service error code to its HTTP status (REST); GraphQL's codes follow. */
export const httpStatusOf: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_balance: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  slippage_exceeded: 409,
  period_not_ended: 409,
  close_blocked: 409,
  cursor_expired: 410,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal: 500,
  analytics_unavailable: 503,
  unavailable: 503,
};

/**
 * `extensions.code` of the GraphQL error for each service error code. Apollo's names where one
 * exists (BAD_USER_INPUT, UNAUTHENTICATED, FORBIDDEN, INTERNAL_SERVER_ERROR), so generic clients
 * recognise them; the rest are the service code in upper case.
 */
export const graphqlCodeOf: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'BAD_USER_INPUT',
  unauthorized: 'UNAUTHENTICATED',
  insufficient_balance: 'INSUFFICIENT_FUNDS',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  slippage_exceeded: 'SLIPPAGE_EXCEEDED',
  period_not_ended: 'PERIOD_NOT_ENDED',
  close_blocked: 'CLOSE_BLOCKED',
  cursor_expired: 'CURSOR_EXPIRED',
  idempotency_key_reused: 'IDEMPOTENCY_KEY_REUSED',
  rate_limited: 'RATE_LIMITED',
  internal: 'INTERNAL_SERVER_ERROR',
  analytics_unavailable: 'ANALYTICS_UNAVAILABLE',
  unavailable: 'SERVICE_UNAVAILABLE',
};

/** JSON body of every REST error: `{ "error": <code>, "message": <text for a person> }`. */
export interface ErrorBody {
  error: string;
  message: string;
}
