import type { FastifyReply, FastifyRequest } from 'fastify';
import { spend } from '../rate-limit-spend.js';
import { clientSubject } from '../client-subject.js';
import type { Scope } from '../../domain/auth/api-key.js';
import { authenticate, requireScope, type Viewer } from '../../domain/auth/api-keys.service.js';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps } from '../../app/api-deps.js';

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
