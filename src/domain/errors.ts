/**
 * The kinds of failure a service can report. Transports map each code to one HTTP status and one
 * GraphQL extension (src/api/error-map.ts); services never choose status codes themselves.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  /** A pagination cursor whose snapshot is gone (trending): restart from the first page. */
  | 'cursor_expired'
  | 'idempotency_key_reused'
  | 'insufficient_balance'
  /** A swap's quote came out below the caller's `min_amount_usdc`: nothing was moved. */
  | 'slippage_exceeded'
  /** A finance period closed before it ended. */
  | 'period_not_ended'
  /** A finance period with open blockers (`details.blockers`: `[{ status, count }]`). */
  | 'close_blocked'
  | 'rate_limited'
  /** An analytics read (ClickHouse) in a process that has no ClickHouse configured. */
  | 'analytics_unavailable'
  | 'unavailable'
  | 'internal';

export class AppError extends Error {
  override name = 'AppError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra machine-readable facts (for example `retryAfterSeconds` for rate_limited). */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}
