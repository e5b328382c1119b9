import type { Paid } from '../../../app/write-path/await-payment.js';
import { likePost } from '../../../app/write-path/like-post.js';
import { repostPost, type CreatedRepost } from '../../../app/write-path/repost-post.js';
import type { LikeState } from '../../../domain/posts/engagement-rules.js';
import { builder } from '../builder.js';
import { PaymentStatus } from './payment-status.js';
import { IDEMPOTENCY_KEY_ARG_DESCRIPTION, runPaidMutation } from '../paid-mutation-key.js';

/*
 * The engagement mutations, each beside the type it answers: the same use cases and the same
 * payment wait as their REST twins (POST /posts/{id}/repost, POST|DELETE /posts/{id}/like), with the
 * same scopes and rate-limit buckets. createPost sits with the Post type (post.ts), send with
 * PaidSend (send.ts).
 */

const PaidRepost = builder.objectRef<Paid<CreatedRepost>>('PaidRepost').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    repostOf: t.exposeID('repostOf'),
    costUsdMicro: t.field({ type: 'MicroUsd', resolve: (repost) => repost.costMicro }),
    swapTx: t.string({ resolve: (repost) => repost.landedSwapTx }),
    status: t.field({ type: PaymentStatus, resolve: (repost) => repost.settled }),
  }),
});

const LikeResult = builder.objectRef<LikeState>('LikeResult').implement({
  fields: (t) => ({
    liked: t.exposeBoolean('liked'),
    likeCount: t.exposeInt('likeCount'),
  }),
});

builder.mutationFields((t) => ({
  repost: t.field({
    type: PaidRepost,
    description: 'Repost ($1 USDC); once per post. Needs `engage`.',
    authScopes: { engage: true },
    rateLimit: 'repost',
    args: {
      postId: t.arg.id({ required: true }),
      idempotencyKey: t.arg.string({ description: IDEMPOTENCY_KEY_ARG_DESCRIPTION }),
    },
    resolve: async (_root, args, ctx, info) => {
      return runPaidMutation(ctx, info, args, (claim) =>
        repostPost(ctx.deps, ctx.viewer!.accountId, String(args.postId), claim),
      );
    },
  }),
  like: t.field({
    type: LikeResult,
    description: 'Like a post (free, idempotent). Needs `engage`.',
    authScopes: { engage: true },
    rateLimit: 'like',
    args: { postId: t.arg.id({ required: true }) },
    resolve: async (_root, { postId }, ctx) => {
      return likePost(ctx.deps, ctx.viewer!.accountId, String(postId), true);
    },
  }),
  unlike: t.field({
    type: LikeResult,
    description: 'Take a like back (idempotent). Needs `engage`.',
    authScopes: { engage: true },
    rateLimit: 'like',
    args: { postId: t.arg.id({ required: true }) },
    resolve: async (_root, { postId }, ctx) => {
      return likePost(ctx.deps, ctx.viewer!.accountId, String(postId), false);
    },
  }),
}));
