import type { ErrorCode } from '../domain/errors.js';

/** The one table from a service error code to its HTTP status (REST) and GraphQL extension code. */
export const httpStatusOf: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_funds: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

/** JSON body of every REST error: `{ "error": <code>, "message": <text for a person> }`. */
export interface ErrorBody {
  error: string;
  message: string;
}
