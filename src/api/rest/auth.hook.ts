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
    /**
     * The route also opens with a signed link (`?signature=…`, a report file's download link): a
     * request with a signature and no Authorization header skips the key and the bucket here, and
     * the route checks its link and spends the bucket of the account the link was issued to.
     */
    signedLink?: boolean;
  }
}

/** A request that presents a signed link instead of a key: checked by its route, not by admit(). */
export function presentsSignedLink(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return (
    request.routeOptions.config.signedLink === true &&
    request.headers.authorization === undefined &&
    query?.signature !== undefined
  );
}

/**
 * One onRequest hook for every /api/v1 route: the route's scope and bucket admitted (admission.ts:
 * 401, 403, then 429), the viewer kept on the request.
 */
export function createAuthHook(deps: ApiDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (presentsSignedLink(request)) return;
    const viewer = await admit(
      deps,
      { authorization: request.headers.authorization, clientIp: request.ip },
      request.routeOptions.config,
      reply,
    );
    if (viewer) request.viewer = viewer;
  };
}
