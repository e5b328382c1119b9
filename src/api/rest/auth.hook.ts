import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientSubject } from '../client-subject.js';
import type { Scope } from '../../domain/auth/api-key.js';
import { authenticate, requireScope, type Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps } from '../api-deps.js';

declare module 'fastify' {
  interface FastifyRequest {
    viewer?: Viewer;
  }
  interface FastifyContextConfig {
    /** The spec's permission for the route; routes without one are public. */
    scope?: Scope;
    /** The rate-limit bucket the route spends from (per account; per IP for public routes). */
    bucket?: RateLimitBucket;
  }
}

/**
 * One onRequest hook for every /api/v1 route, in the order a client can act on: 401 (who are you),
 * 403 (what may this key do), then 429 (how fast). Rate limits count per account, so a second
 * key does not double the budget; public routes (sign-up) count per client IP.
 */
export function createAuthHook(deps: ApiDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const { scope, bucket } = request.routeOptions.config;
    let subject = clientSubject(request.ip);
    if (scope) {
      request.viewer = await authenticate(deps.apiKeys, request.headers.authorization);
      requireScope(request.viewer, scope);
      subject = request.viewer.accountId;
    }
    if (bucket) await spend(deps, reply, bucket, subject);
  };
}

/**
 * Spends `cost` requests (one for REST; a GraphQL operation's price, see graphql/query-limits.ts)
 * from the bucket and sets the IETF RateLimit headers; 429 past the limit. A cost above the
 * bucket's whole limit (possible under a small RATE_LIMIT_MULTIPLIER) counts as the whole limit,
 * so an operation the query limits allow can still run once per window.
 */
export async function spend(
  deps: ApiDeps,
  reply: FastifyReply | undefined,
  bucket: RateLimitBucket,
  subject: string,
  cost = 1,
): Promise<void> {
  let decision = await deps.rateLimiter.consume(bucket, subject, cost);
  if (!decision.disabled && !decision.allowed && cost > decision.limit) {
    decision = await deps.rateLimiter.consume(bucket, subject, decision.limit);
  }
  if (decision.disabled) return;
  void reply?.header('ratelimit-policy', decision.policy).header('ratelimit', decision.header);
  if (!decision.allowed) {
    throw new AppError(
      'rate_limited',
      `Rate limit exceeded: ${decision.limit} ${bucket} requests per window${cost > 1 ? ` (this one counts as ${Math.min(cost, decision.limit)})` : ''}; retry in ${decision.retryAfterSeconds ?? decision.resetSeconds} s`,
      { retryAfterSeconds: decision.retryAfterSeconds ?? decision.resetSeconds },
    );
  }
}
