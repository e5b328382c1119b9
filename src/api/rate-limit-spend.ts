import { AppError } from '../domain/errors.js';
import type { RateLimitBucket } from '../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps } from '../app/api-deps.js';

/** Where the RateLimit headers go: a Fastify reply, or the headers of an answer being built. */
export interface HeaderSink {
  header(name: string, value: string): unknown;
}

/** A sink that collects the headers into the header object of an answer being built. */
export function headersInto(headers: Record<string, string>): HeaderSink {
  return { header: (name, value) => (headers[name] = value) };
}

/**
 * Spends `cost` requests (one for REST; a GraphQL operation's price, see graphql/query-limits.ts)
 * from the bucket and sets the IETF RateLimit headers; 429 past the limit. A cost above the
 * bucket's whole limit (possible under a small RATE_LIMIT_MULTIPLIER) counts as the whole limit,
 * so an operation the query limits allow can still run once per window.
 */
export async function spend(
  deps: Pick<ApiDeps, 'rateLimiter'>,
  reply: HeaderSink | undefined,
  bucket: RateLimitBucket,
  subject: string,
  cost = 1,
): Promise<void> {
  let decision = await deps.rateLimiter.consume(bucket, subject, cost);
  if (!decision.disabled && !decision.allowed && cost > decision.limit) {
    decision = await deps.rateLimiter.consume(bucket, subject, decision.limit);
  }
  if (decision.disabled) return;
  reply?.header('ratelimit-policy', decision.policy);
  reply?.header('ratelimit', decision.header);
  if (!decision.allowed) {
    throw new AppError(
      'rate_limited',
      `Rate limit exceeded: ${decision.limit} ${bucket} requests per window${cost > 1 ? ` (this one counts as ${Math.min(cost, decision.limit)})` : ''}; retry in ${decision.retryAfterSeconds ?? decision.resetSeconds} s`,
      { retryAfterSeconds: decision.retryAfterSeconds ?? decision.resetSeconds },
    );
  }
}
