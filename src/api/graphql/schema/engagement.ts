import { postCountsChanged, postWritten } from '../../../app/live-updates.js';
import { createPaidPost, type CreatedPost } from '../../../app/write-path/create-post.js';
import { setLike } from '../../../app/write-path/like-post.js';
import { repostPost, type CreatedRepost } from '../../../app/write-path/repost-post.js';
import { sendUsdc, type CreatedSend } from '../../../app/write-path/send-usdc.js';
import type { LikeState } from '../../../domain/posts/engagement-rules.js';
import { awaitPayment, type AwaitedPayment } from '../../../app/write-path/await-payment.js';
import type { ApiDeps } from '../../api-deps.js';
import { builder } from '../builder.js';
import { spendFor } from '../rate-limits.js';

/*
 * The write mutations: the same service functions and the same payment wait as their REST twins
 * (POST /posts, POST /posts/{id}/repost, POST /send, POST|DELETE /posts/{id}/like), with the same scopes and
 * rate-limit buckets. Money is a string-serialised MicroUsd; `status` says how far the payment
 * had got within WRITE_TIMEOUT_MS.
 */

export const PaymentStatus = builder.enumType('PaymentStatus', {
  description: 'How far the USDC payment had got when the mutation answered.',
  values: {
    SENT: {
      value: 'sent',
      description:
        'Executed by the cluster (commitment processed); the worker follows it to confirmed, and its credits become spendable then.',
    },
    CONFIRMED: { value: 'confirmed', description: 'Confirmed on chain.' },
    FINALIZED: { value: 'finalized', description: 'Finalized on chain.' },
    PENDING: {
      value: 'pending',
      description: 'Not executed within WRITE_TIMEOUT_MS; the worker goes on (the swapTx is already known).',
    },
  } as const,
});

export const PostTypeEnum = builder.enumType('PostType', {
  values: { POST: { value: 'post' }, REPLY: { value: 'reply' }, QUOTE: { value: 'quote' } } as const,
});

type Paid<T> = T & { status: AwaitedPayment['settled']; landedSwapTx: string };

const PaidPost = builder.objectRef<Paid<CreatedPost>>('PaidPost').implement({
  description: 'A post, reply or quote just paid for ($1).',
  fields: (t) => ({
    id: t.exposeID('id'),
    type: t.field({ type: PostTypeEnum, resolve: (post) => post.type }),
    content: t.exposeString('content'),
    costUsdMicro: t.field({ type: 'MicroUsd', resolve: (post) => post.costMicro }),
    swapTx: t.string({
      description: 'The landed signature of the USDC payment.',
      resolve: (post) => post.landedSwapTx,
    }),
    status: t.field({ type: PaymentStatus, resolve: (post) => post.status }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const PaidRepost = builder.objectRef<Paid<CreatedRepost>>('PaidRepost').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    repostOf: t.exposeID('repostOf'),
    costUsdMicro: t.field({ type: 'MicroUsd', resolve: (repost) => repost.costMicro }),
    swapTx: t.string({ resolve: (repost) => repost.landedSwapTx }),
    status: t.field({ type: PaymentStatus, resolve: (repost) => repost.status }),
  }),
});

const PaidSend = builder.objectRef<Paid<CreatedSend>>('PaidSend').implement({
  description: 'USDC just sent to another account.',
  fields: (t) => ({
    id: t.exposeID('id'),
    from: t.exposeString('fromHandle', { description: 'Handle of the sender.' }),
    to: t.exposeString('toHandle', { description: 'Handle of the recipient.' }),
    amountUsdMicro: t.field({ type: 'MicroUsd', resolve: (send) => send.amountMicro }),
    memo: t.exposeString('memo', { nullable: true }),
    swapTx: t.string({ resolve: (send) => send.landedSwapTx }),
    status: t.field({ type: PaymentStatus, resolve: (send) => send.status }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const SendInput = builder.inputType('SendInput', {
  fields: (t) => ({
    toHandle: t.string({ required: true }),
    amountUsd: t.string({
      required: true,
      description:
        'Decimal dollars as a string, read exactly ("1.25"): at least 0.01, at most 6 decimals, at most the available balance.',
    }),
    memo: t.string({ description: 'At most 200 characters; goes on chain and into both histories.' }),
  }),
});

const LikeResult = builder.objectRef<LikeState>('LikeResult').implement({
  fields: (t) => ({
    liked: t.exposeBoolean('liked'),
    likeCount: t.exposeInt('likeCount'),
  }),
});

const CreatePostInput = builder.inputType('CreatePostInput', {
  fields: (t) => ({
    content: t.string({ required: true }),
    type: t.field({ type: PostTypeEnum, required: true }),
    parentId: t.id({ description: 'The post replied to (reply only).' }),
    quotedPostId: t.id({ description: 'The post quoted (quote only).' }),
  }),
});

builder.mutationFields((t) => ({
  createPost: t.field({
    type: PaidPost,
    description: 'Post, reply or quote ($1 USDC). Needs `post`.',
    authScopes: { post: true },
    args: { input: t.arg({ type: CreatePostInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await spendFor(ctx, 'post');
      const created = await createPaidPost(ctx.deps, ctx.viewer!.accountId, {
        content: input.content,
        type: input.type,
        ...(input.parentId ? { parent_id: String(input.parentId) } : {}),
        ...(input.quotedPostId ? { quoted_post_id: String(input.quotedPostId) } : {}),
      });
      const { settled, swapTx } = await awaitPayment(ctx.deps, created);
      await postWritten(ctx.deps, created);
      return { ...created, status: settled, landedSwapTx: swapTx };
    },
  }),
  repost: t.field({
    type: PaidRepost,
    description: 'Repost ($1 USDC); once per post. Needs `engage`.',
    authScopes: { engage: true },
    args: { postId: t.arg.id({ required: true }) },
    resolve: async (_root, { postId }, ctx) => {
      await spendFor(ctx, 'repost');
      const created = await repostPost(ctx.deps, ctx.viewer!.accountId, String(postId));
      const { settled, swapTx } = await awaitPayment(ctx.deps, created);
      await postCountsChanged(ctx.deps, created.repostOf);
      return { ...created, status: settled, landedSwapTx: swapTx };
    },
  }),
  send: t.field({
    type: PaidSend,
    description: 'Send USDC to another account (the twin of POST /send). Needs `send`.',
    authScopes: { send: true },
    args: { input: t.arg({ type: SendInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await spendFor(ctx, 'send');
      const created = await sendUsdc(ctx.deps, ctx.viewer!.accountId, {
        to_handle: input.toHandle,
        amount_usd: input.amountUsd,
        ...(input.memo !== null && input.memo !== undefined ? { memo: input.memo } : {}),
      });
      const { settled, swapTx } = await awaitPayment(ctx.deps, created);
      return { ...created, status: settled, landedSwapTx: swapTx };
    },
  }),
  like: t.field({
    type: LikeResult,
    description: 'Like a post (free, idempotent). Needs `engage`.',
    authScopes: { engage: true },
    args: { postId: t.arg.id({ required: true }) },
    resolve: async (_root, { postId }, ctx) => {
      await spendFor(ctx, 'like');
      return likeAndPublish(ctx.deps, ctx.viewer!.accountId, String(postId), true);
    },
  }),
  unlike: t.field({
    type: LikeResult,
    description: 'Take a like back (idempotent). Needs `engage`.',
    authScopes: { engage: true },
    args: { postId: t.arg.id({ required: true }) },
    resolve: async (_root, { postId }, ctx) => {
      await spendFor(ctx, 'like');
      return likeAndPublish(ctx.deps, ctx.viewer!.accountId, String(postId), false);
    },
  }),
}));

/** setLike, then the live update when the like actually changed (after the commit). */
async function likeAndPublish(deps: ApiDeps, accountId: string, postId: string, liked: boolean) {
  const state = await setLike(deps, accountId, postId, liked);
  if (state.changed) await postCountsChanged(deps, state.postId);
  return state;
}
