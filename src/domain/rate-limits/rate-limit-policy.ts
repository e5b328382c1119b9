/**
 * The request budgets of the API, per subject (an account, or a client IP where there is no
 * account yet), from the Limits section of docs/spec/social-posting-api.md. Pure data and arithmetic:
 * counting lives in adapters/redis/rate-limiter.ts.
 */

export type RateLimitBucket =
  | 'post'
  | 'read'
  | 'like'
  | 'repost'
  | 'send'
  | 'webhooks'
  | 'reports'
  | 'signup'
  | 'signup_global'
  | 'anonymous';

export interface RateLimitRule {
  /** Requests allowed per window, before the deployment's multiplier. */
  limit: number;
  /** Length of the sliding window, in seconds: at most `limit` in any interval this long. */
  windowSeconds: number;
}

export const RATE_LIMITS: Readonly<Record<RateLimitBucket, Readonly<RateLimitRule>>> = Object.freeze({
  /** Posts, replies and quotes: 10 per minute (spec). */
  post: { limit: 10, windowSeconds: 60 },
  /** Read requests: 60 per minute (spec). */
  read: { limit: 60, windowSeconds: 60 },
  /** Likes and unlikes together: 30 per minute (spec). */
  like: { limit: 30, windowSeconds: 60 },
  /** Reposts: 10 per minute (spec). */
  repost: { limit: 10, windowSeconds: 60 },
  /** Send USDC: 5 per minute (spec). */
  send: { limit: 5, windowSeconds: 60 },
  /**
   * Webhook endpoint changes (create, delete, rotate, enable, replay): 20 per minute. Not in the
   * spec. Each is a lookup of a name the client chose (create), or work for the dispatcher: a
   * replay from the start re-sends the whole kept log, so replays in a loop would make us flood a
   * receiver. An integrator setting up or rotating needs a handful; listing spends `read`.
   */
  webhooks: { limit: 20, windowSeconds: 60 },
  /**
   * Report runs asked for (POST /reports, requestReport): 10 per minute. Not in the spec. A run
   * reads up to a year of the ledger in ClickHouse and writes a file, in the worker role; the same
   * parameters while a run is live answer that run, but distinct ones each start one. Reading runs
   * and downloading files spends `read`.
   */
  reports: { limit: 10, windowSeconds: 60 },
  /**
   * Open account creation, per client IP: 5 per hour. Not in the spec (it shows no limit for
   * sign-up); our choice, so one address cannot mint accounts in bulk to spread the per-account
   * budgets above, while a shared NAT still lets a handful of people sign up in an hour.
   */
  signup: { limit: 5, windowSeconds: 3_600 },
  /**
   * Open account creation for the whole deployment (subject "all"), besides the per-IP budget:
   * 100 per hour. Many addresses (a botnet, an IPv6 block), each within its 5 per hour, cannot
   * mint accounts without bound: at most 2,400 a day, each a row, a wallet and an API key (and
   * fresh accounts to farm engagement with). The price is that such an attack holds off honest
   * sign-ups while it lasts; 100 an hour is far above what a young deployment sees, and
   * RATE_LIMIT_MULTIPLIER raises it with the others. Not announced in headers: its remaining
   * count would tell anyone how many accounts were opened in the last hour.
   */
  signup_global: { limit: 100, windowSeconds: 3_600 },
  /**
   * GraphQL operations without an API key, per client IP: 60 per minute, spent by cost like `read`
   * (api/graphql/query-limits.ts). Not in the spec. Without a key only `health`, `__typename` and
   * introspection answer, so this bounds what an address can make us compute and send without
   * ever signing up: one account's read budget, plenty for a monitor polling `health` every few
   * seconds and GraphiQL loading the schema (one request's worth), while a flood of operations
   * from one address stops after 60 requests' worth of cost a minute.
   */
  anonymous: { limit: 60, windowSeconds: 60 },
});

/**
 * The limit that applies to `bucket` once the deployment's multiplier is applied, or null when
 * limits are off (multiplier 0). A positive multiplier never brings a limit below 1, so a tiny
 * multiplier throttles hard but never locks a bucket shut.
 */
export function effectiveLimit(bucket: RateLimitBucket, multiplier: number): number | null {
  if (multiplier === 0) return null;
  if (!Number.isFinite(multiplier) || multiplier < 0) {
    throw new RangeError(`rate limit multiplier must be 0 or a positive number, got ${multiplier}`);
  }
  return Math.max(1, Math.floor(RATE_LIMITS[bucket].limit * multiplier));
}
