import {
  accountEarnings,
  listEpochs,
  MAX_EPOCHS_PAGE,
  type Earnings,
  type EpochView,
} from '../../../app/creator-fund/fund-reads.js';
import { formatNative } from '../../../domain/payouts/creator-fund-rules.js';
import { builder } from '../builder.js';
import { ViewerRef } from './account.js';

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

builder.queryFields((t) => ({
  creatorFundEpochs: t.field({
    type: [EpochRef],
    description: `The creator fund's latest epochs, newest first; limit 1 to ${MAX_EPOCHS_PAGE}, default 24. Needs \`read\`.`,
    authScopes: { read: true },
    args: { limit: t.arg.int({ defaultValue: 24 }) },
    resolve: (_root, args, ctx) => listEpochs(ctx.deps.db, args.limit ?? 24),
  }),
}));
