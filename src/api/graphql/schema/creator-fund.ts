import { createContextCache } from '@pothos/core';
import DataLoader from 'dataloader';
import {
  accountEarnings,
  fundSharesOf,
  listEpochs,
  MAX_EPOCHS_PAGE,
  type Earnings,
  type EpochView,
  type FundShare,
} from '../../../app/creator-fund/fund-reads.js';
import { formatNative } from '../../../domain/payouts/creator-fund-rules.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { ViewerRef } from './account.js';
import { TransactionStatusEnum } from './transaction.js';

/*
 * The creator fund: the viewer's earnings (USDC engagement shares and native fund payouts) and the
 * fund's epochs. USDC as MicroUsd strings like every dollar field; native tokens as decimal token
 * strings ("12.5"; 9 decimals, never a float).
 */

const NATIVE_DESCRIPTION = 'Native tokens as a decimal string ("12.5"; 9 decimals), never a float.';

const EarningsRef = builder.objectRef<Earnings>('Earnings').implement({
  description:
    'What the viewer earned: shares of paid engagement with their posts (USDC) and creator-fund payouts (native tokens), settled (confirmed on chain) and pending (signed or sent, not confirmed; gone if it fails).',
  fields: (t) => ({
    directSharesSettledUsdMicro: t.field({ type: 'MicroUsd', resolve: (e) => e.directSettledMicro }),
    directSharesPendingUsdMicro: t.field({ type: 'MicroUsd', resolve: (e) => e.directPendingMicro }),
    fundPayoutsSettledNative: t.string({
      description: NATIVE_DESCRIPTION,
      resolve: (e) => formatNative(e.fundSettled),
    }),
    fundPayoutsPendingNative: t.string({
      description: NATIVE_DESCRIPTION,
      resolve: (e) => formatNative(e.fundPending),
    }),
  }),
});

builder.objectField(ViewerRef, 'earnings', (t) =>
  t.field({
    type: EarningsRef,
    resolve: (account, _args, ctx) => accountEarnings(ctx.deps.db, account.id),
  }),
);

const EpochStatusEnum = builder.enumType('CreatorFundEpochStatus', {
  description:
    'SENDING: batches in flight; PAID: every batch confirmed; PARTLY_FAILED: a batch failed on chain (reversed); NO_ENGAGEMENT: nobody to pay; UNFUNDED: the fund was empty (tried again when topped up).',
  values: {
    SENDING: { value: 'sending' },
    PAID: { value: 'paid' },
    PARTLY_FAILED: { value: 'partly_failed' },
    NO_ENGAGEMENT: { value: 'no_engagement' },
    UNFUNDED: { value: 'unfunded' },
  } as const,
});

const EpochRef = builder.objectRef<EpochView>('CreatorFundEpoch').implement({
  fields: (t) => ({
    start: t.expose('start', { type: 'DateTime' }),
    end: t.expose('end', { type: 'DateTime' }),
    budgetNative: t.string({ description: NATIVE_DESCRIPTION, resolve: (e) => formatNative(e.budget) }),
    fundAvailableNative: t.string({
      description: `What the fund could pay when the epoch was planned. ${NATIVE_DESCRIPTION}`,
      resolve: (e) => formatNative(e.fundAvailable),
    }),
    paidNative: t.string({
      description: `Paid (or being paid) to authors; failed batches excluded. ${NATIVE_DESCRIPTION}`,
      resolve: (e) => formatNative(e.paidTotal),
    }),
    authorCount: t.exposeInt('authorCount'),
    status: t.field({ type: EpochStatusEnum, resolve: (e) => e.status }),
    note: t.exposeString('note', {
      description: 'Why nothing or less than the budget was paid; empty otherwise.',
    }),
    batchSignatures: t.exposeStringList('batchSignatures', {
      description: 'The Solana signature of each payout batch, in batch order.',
    }),
  }),
});

const FundShareRef = builder.objectRef<FundShare>('CreatorFundShare').implement({
  description:
    "The viewer's share of one epoch: the tokens paid to them, the score they were computed from beside the epoch's total score (the epoch's paidNative is the fund's total paid), and the payout batch's transaction.",
  fields: (t) => ({
    tokensNative: t.string({
      description: `Paid to the viewer in this epoch (planned; when status is FAILED the batch was reversed and nothing arrived). ${NATIVE_DESCRIPTION}`,
      resolve: (share) => formatNative(share.amount),
    }),
    score: t.int({
      description:
        "The viewer's engagement score: each engager's likes ×1, replies ×3, quotes ×4 and reposts ×2 on the viewer's posts in the epoch, capped at 10 points per engager, summed (docs/money.md). The split by kind is not recorded.",
      resolve: (share) => Number(share.score),
    }),
    epochScore: t.int({
      description:
        "Every paid author's score in the epoch, summed: the share is about budget × score / epochScore.",
      resolve: (share) => Number(share.epochScore),
    }),
    swapTx: t.exposeString('swapTx', {
      description:
        "The payout batch's Solana signature (GraphQL payment(swapTx), REST GET /payments/{swap_tx}).",
    }),
    status: t.field({
      type: TransactionStatusEnum,
      description: "The payout batch's state now, as the viewer's history shows it.",
      resolve: (share) => share.status,
    }),
  }),
});

/**
 * The viewer's shares of the epochs of one answer: one statement for the page, whatever its size.
 * Keyed by epoch start (ms); without a viewer there is no share (creatorFundEpochs needs one).
 */
const shareLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<Date, FundShare | null, number>(
      async (starts) => {
        const viewer = ctx.viewer;
        if (!viewer) return starts.map(() => null);
        const shares = await fundSharesOf(ctx.deps.db, viewer.accountId, starts);
        return starts.map((start) => shares.get(start.getTime()) ?? null);
      },
      { cacheKeyFn: (start) => start.getTime() },
    ),
);

builder.objectField(EpochRef, 'myShare', (t) =>
  t.field({
    type: FundShareRef,
    nullable: true,
    description: "The viewer's own share of this epoch; null when the epoch paid the viewer nothing.",
    resolve: (epoch, _args, ctx) => shareLoader(ctx).load(epoch.start),
  }),
);

builder.queryFields((t) => ({
  creatorFundEpochs: t.field({
    type: [EpochRef],
    description: `The creator fund's latest epochs, newest first; limit 1 to ${MAX_EPOCHS_PAGE}, default 24. Needs \`read\`.`,
    authScopes: { read: true },
    args: { limit: t.arg.int({ defaultValue: 24 }) },
    resolve: (_root, args, ctx) => listEpochs(ctx.deps.db, args.limit ?? 24),
  }),
}));
