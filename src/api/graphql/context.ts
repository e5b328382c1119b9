import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps } from '../api-deps.js';
import { toGraphqlError } from './errors.js';

export type { Viewer };

/** Built once per request: per-request DataLoaders hang off it so batching stays per request. */
export interface GraphQLContext {
  deps: ApiDeps;
  /** The caller behind the request's API key; null when the request sent none. */
  viewer: Viewer | null;
  req: FastifyRequest;
  reply: FastifyReply;
  /**
   * What this request spent, bucket and cost (requests) per spend, so a cached answer can spend the
   * same again (response-cache.ts).
   */
  spent: Array<{ bucket: RateLimitBucket; cost: number }>;
  /** Set by the response cache's plugin when this request's answer may be kept. */
  cacheable: boolean;
}

/**
 * Resolves the viewer once per request. No `Authorization` header is an anonymous request (public
 * fields such as `health` still answer; fields with a scope answer UNAUTHENTICATED). A header with a
 * bad key fails the whole request with HTTP 401, as REST does: the client asked to be someone and
 * is not, so no field of the answer would mean what it expects.
 */
export async function createContext(
  deps: ApiDeps,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<GraphQLContext> {
  const header = req.headers.authorization;
  if (!header) return { deps, viewer: null, req, reply, spent: [], cacheable: false };
  try {
    const viewer = await authenticate(deps.apiKeys, header);
    return { deps, viewer, req, reply, spent: [], cacheable: false };
  } catch (error) {
    if (error instanceof AppError) throw toGraphqlError(error, undefined, { http: { status: 401 } });
    throw error;
  }
}
