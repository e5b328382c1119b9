import type { FastifyReply, FastifyRequest } from 'fastify';
import { admit } from '../admission.js';
import type { Scope } from '../../domain/auth/api-key.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
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
 * One onRequest hook for every /api/v1 route: the route's scope and bucket admitted (admission.ts:
 * 401, 403, then 429), the viewer kept on the request.
 */
export function createAuthHook(deps: ApiDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const viewer = await admit(
      deps,
      { authorization: request.headers.authorization, clientIp: request.ip },
      request.routeOptions.config,
      reply,
    );
    if (viewer) request.viewer = viewer;
  };
}
