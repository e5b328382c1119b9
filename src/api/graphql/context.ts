import type { FastifyReply, FastifyRequest } from 'fastify';
import { accountKey, postKey, type ChangeKey } from '../../app/change-signals.js';
import type { DependencyTracker } from '../../app/read-cache.js';
import { authenticate, type Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import type { PostView } from '../../domain/posts/post-read-model.js';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps, ReadDeps } from '../../app/api-deps.js';
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
  /** `deps.reads`: the read path's own pool and stores, what the post and feed reads use. */
  readDeps: ReadDeps;
  /** Set by the response cache's plugin when this request's answer may be kept. */
  cacheable: boolean;
  /**
   * Where resolvers record what the answer shows (response-cache.ts), when it may be cached;
   * undefined otherwise (caches off, a GET, a mutation's request...).
   */
  track: DependencyTracker | undefined;
}

/** The answer shows these posts: their content and counts, whether they are shown, their authors. */
export function readsPosts(ctx: GraphQLContext, posts: readonly PostView[]): void {
  const track = ctx.track;
  if (!track) return;
  for (const post of posts) {
    track.reads(postKey(post.id));
    track.reads(accountKey(post.author.id));
  }
}

/** The answer shows what `key` names (app/change-signals.ts). */
export function readsKey(ctx: GraphQLContext, key: ChangeKey): void {
  ctx.track?.reads(key);
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
  track?: DependencyTracker,
): Promise<GraphQLContext> {
  const header = req.headers.authorization;
  const readDeps = deps.reads;
  if (!header) return { deps, readDeps, viewer: null, req, reply, spent: [], cacheable: false, track };
  try {
    const viewer = await authenticate(deps.apiKeys, header);
    return { deps, readDeps, viewer, req, reply, spent: [], cacheable: false, track };
  } catch (error) {
    if (error instanceof AppError) throw toGraphqlError(error, undefined, { http: { status: 401 } });
    throw error;
  }
}
