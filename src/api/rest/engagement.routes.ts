import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { likePost } from '../../app/write-path/like-post.js';
import { repostPost } from '../../app/write-path/repost-post.js';
import type { ApiDeps } from '../../app/api-deps.js';
import {
  authErrors,
  errorBody,
  idempotencyKeyHeaders,
  insufficientBalanceBody,
  postIdParams,
  pendingStatus,
} from './schemas.js';

/** The spec's Repost object; `status` only on 202. */
const createdRepost = {
  type: 'object',
  required: ['id', 'repost_of', 'cost_usd_micro', 'swap_tx'],
  properties: {
    id: { type: 'string', description: 'ID of the new repost' },
    repost_of: { type: 'string', description: 'ID of the original post' },
    cost_usd_micro: { type: 'integer', description: 'Micro-USD; 1000000 equals $1.00' },
    swap_tx: { type: 'string', description: 'Signature of the USDC payment' },
    status: pendingStatus,
  },
} as const;

/**
 * The spec shows no body for like and unlike: ours is the state left behind and the post's like
 * count after it, `{ "liked": true | false, "like_count": <n> }`, the same for a repeat (idempotent).
 */
const likeState = {
  type: 'object',
  required: ['liked', 'like_count'],
  properties: {
    liked: { type: 'boolean' },
    like_count: { type: 'integer', description: 'Likes of the post after this request' },
  },
} as const;

/**
 * Reposts ($1, paid like a reply: 50% to the original author) and likes (free). Every route needs
 * `engage`: for repost the spec's scope table (engage) wins over the endpoint text (post), being
 * the more specific statement (README). Buckets: `repost` (10/min) and `like` (30/min, likes and
 * unlikes together).
 */
export function registerEngagementRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).post(
    '/posts/:id/repost',
    {
      config: { scope: 'engage', bucket: 'repost', idempotent: true },
      schema: {
        operationId: 'repost',
        summary: 'Repost a post ($1 USDC; 50% to its author); once per post',
        tags: ['posts'],
        headers: idempotencyKeyHeaders,
        params: postIdParams,
        response: {
          201: createdRepost,
          202: createdRepost,
          402: insufficientBalanceBody,
          404: errorBody,
          422: errorBody,
          409: errorBody,
          503: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const repost = await repostPost(
        deps,
        request.viewer!.accountId,
        request.params.id,
        request.idempotency,
      );
      return reply.status(repost.settled === 'pending' ? 202 : 201).send({
        id: repost.id,
        repost_of: repost.repostOf,
        cost_usd_micro: Number(repost.costMicro),
        swap_tx: repost.landedSwapTx,
        ...(repost.settled === 'pending' ? { status: 'pending' } : {}),
      });
    },
  );

  for (const [method, liked] of [
    ['POST', true],
    ['DELETE', false],
  ] as const) {
    api.route<{ Params: { id: string } }>({
      method,
      url: '/posts/:id/like',
      config: { scope: 'engage', bucket: 'like' },
      schema: {
        operationId: liked ? 'likePost' : 'unlikePost',
        summary: liked ? 'Like a post (free, idempotent)' : 'Unlike a post (free, idempotent)',
        tags: ['posts'],
        params: postIdParams,
        response: { 200: likeState, 404: errorBody, ...authErrors },
      },
      handler: async (request) => {
        const state = await likePost(deps, request.viewer!.accountId, request.params.id, liked);
        return { liked: state.liked, like_count: state.likeCount };
      },
    });
  }
}
