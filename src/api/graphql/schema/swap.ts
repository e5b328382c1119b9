import { quoteSwap, swapToUsdc, type SwapResult } from '../../../app/swap/swap-to-usdc.js';
import { SWAP_FEE_BPS, type SwapQuote } from '../../../domain/swap/constant-product.js';
import { MAX_SWAP_TOKENS } from '../../../domain/swap/swap-rules.js';
import { formatMicroUsd } from '../../../domain/money/usd.js';
import { builder } from '../builder.js';
import { IDEMPOTENCY_KEY_ARG_DESCRIPTION, runPaidMutation } from '../paid-mutation-key.js';
import { ViewerRef } from './account.js';
import { PaymentStatus } from './payment-status.js';

/*
 * Swap to USDC: the twins of GET /swap-quote and POST /swap-to-usdc, calling the same service
 * functions with the same scopes and rate-limit buckets. Native amounts are strings of base units
 * (9 decimals); USDC amounts are MicroUsd, plus a decimal-dollar string like the other money fields.
 */

const TOKENS = `Native-token base units (9 decimals) as a string of digits: 1 to ${MAX_SWAP_TOKENS}.`;

const SwapQuoteRef = builder.objectRef<SwapQuote>('SwapQuote').implement({
  description:
    'What selling native tokens to the pool would pay now (x*y=k, 30 bps fee, rounded for the pool).',
  fields: (t) => ({
    amountTokens: t.string({ description: 'Base units sold.', resolve: (q) => q.amountTokens.toString() }),
    amountUsdcMicro: t.field({ type: 'MicroUsd', resolve: (q) => q.amountUsdcMicro }),
    amountUsdc: t.string({
      description: 'The same, as decimal dollars ("1.5").',
      resolve: (q) => formatMicroUsd(q.amountUsdcMicro),
    }),
    feeTokens: t.string({
      description: 'The fee part of amountTokens (rounded up).',
      resolve: (q) => q.feeTokens.toString(),
    }),
    feeBps: t.int({ resolve: () => Number(SWAP_FEE_BPS) }),
    priceImpactBps: t.int({
      description: 'How far below the spot price the fee-free part is priced (basis points).',
      resolve: (q) => q.priceImpactBps,
    }),
    reserveTokens: t.string({
      description: 'The pool’s native reserve the quote priced against (base units).',
      resolve: (q) => q.reservesBefore.nativeUnits.toString(),
    }),
    reserveUsdcMicro: t.field({ type: 'MicroUsd', resolve: (q) => q.reservesBefore.usdcMicro }),
  }),
});

const SwapResultRef = builder.objectRef<SwapResult>('SwapResult').implement({
  description: 'Native tokens just sold for USDC.',
  fields: (t) => ({
    id: t.exposeID('id'),
    amountTokens: t.string({ resolve: (s) => s.quote.amountTokens.toString() }),
    amountUsdcMicro: t.field({ type: 'MicroUsd', resolve: (s) => s.quote.amountUsdcMicro }),
    amountUsdc: t.string({
      description: 'USDC received, as decimal dollars.',
      resolve: (s) => formatMicroUsd(s.quote.amountUsdcMicro),
    }),
    swapTx: t.exposeString('swapTx', { description: 'Signature of the swap transaction.' }),
    status: t.field({ type: PaymentStatus, resolve: (s) => s.settled }),
  }),
});

builder.queryFields((t) => ({
  swapQuote: t.field({
    type: SwapQuoteRef,
    description: 'Quote a swap to USDC without making it (REST GET /swap-quote). Needs `read`.',
    authScopes: { read: true },
    args: { amountTokens: t.arg.string({ required: true, description: TOKENS }) },
    resolve: async (_root, { amountTokens }, ctx) => {
      return quoteSwap(ctx.deps, amountTokens);
    },
  }),
}));

builder.mutationFields((t) => ({
  swapToUsdc: t.field({
    type: SwapResultRef,
    description:
      'Sell native tokens for USDC through the platform pool (REST POST /swap-to-usdc). Needs `send`. Below minAmountUsdc: SLIPPAGE_EXCEEDED, nothing moves.',
    authScopes: { send: true },
    rateLimit: 'send',
    args: {
      amountTokens: t.arg.string({ required: true, description: TOKENS }),
      minAmountUsdc: t.arg.string({
        description: 'The least USDC to accept, as decimal dollars ("1.25"), at most 6 decimals.',
      }),
      idempotencyKey: t.arg.string({ description: IDEMPOTENCY_KEY_ARG_DESCRIPTION }),
    },
    resolve: async (_root, args, ctx, info) => {
      return runPaidMutation(ctx, info, args, (claim) =>
        swapToUsdc(
          ctx.deps,
          ctx.viewer!.accountId,
          {
            amount_tokens: args.amountTokens,
            ...(args.minAmountUsdc != null ? { min_amount_usdc: args.minAmountUsdc } : {}),
          },
          claim,
        ),
      );
    },
  }),
}));

builder.objectField(ViewerRef, 'nativeTokens', (t) =>
  t.string({
    description:
      'Available native-token balance in base units (9 decimals), from the ledger (REST GET /me native_tokens).',
    resolve: async (account, _args, ctx) =>
      (await ctx.deps.ledger.money(account.id, 'native')).availableMicro.toString(),
  }),
);
