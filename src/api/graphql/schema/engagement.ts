import type { Paid } from '../../../app/write-path/await-payment.js';
import { likePost } from '../../../app/write-path/like-post.js';
import { repostPost, type CreatedRepost } from '../../../app/write-path/repost-post.js';
import { sendUsdc, type CreatedSend } from '../../../app/write-path/send-usdc.js';
import type { LikeState } from '../../../domain/posts/engagement-rules.js';
import { parseSendAmount } from '../../../domain/sends/send-rules.js';
import { builder } from '../builder.js';
import { IDEMPOTENCY_KEY_ARG_DESCRIPTION, runPaidMutation } from '../paid-mutation-key.js';

/*
 * The engagement and send mutations (createPost sits with the Post type, in post.ts): the same
 * service functions and the same payment wait as their REST twins (POST /posts/{id}/repost,
 * POST /send, POST|DELETE /posts/{id}/like), with the same scopes and rate-limit buckets. Money is
 * a string-serialised MicroUsd; `status` says how far the payment had got within WRITE_TIMEOUT_MS.
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

const PaidRepost = builder.objectRef<Paid<CreatedRepost>>('PaidRepost').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    repostOf: t.exposeID('repostOf'),
    costUsdMicro: t.field({ type: 'MicroUsd', resolve: (repost) => repost.costMicro }),
    swapTx: t.string({ resolve: (repost) => repost.landedSwapTx }),
    status: t.field({ type: PaymentStatus, resolve: (repost) => repost.settled }),
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
    status: t.field({ type: PaymentStatus, resolve: (send) => send.settled }),
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
    memo: t.string({
      description:
        'At most 200 characters, one line: no control characters (U+0000-U+001F, U+007F-U+009F) and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069); goes on chain and into both histories.',
    }),
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
  send: t.field({
    type: PaidSend,
    description: 'Send USDC to another account (the twin of POST /send). Needs `send`.',
    authScopes: { send: true },
    rateLimit: 'send',
    args: {
      input: t.arg({ type: SendInput, required: true }),
      idempotencyKey: t.arg.string({ description: IDEMPOTENCY_KEY_ARG_DESCRIPTION }),
    },
    resolve: async (_root, args, ctx, info) => {
      const { input } = args;
      return runPaidMutation(ctx, info, args, (claim) =>
        sendUsdc(
          ctx.deps,
          ctx.viewer!.accountId,
          {
            toHandle: input.toHandle,
            amountMicro: parseSendAmount(input.amountUsd, 'amountUsd'),
            memo: input.memo ?? null,
          },
          claim,
        ),
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
