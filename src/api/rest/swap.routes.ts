import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { quoteSwap, swapToUsdc } from '../../app/swap/swap-to-usdc.js';
import { MAX_SWAP_TOKENS } from '../../domain/swap/swap-rules.js';
import { SWAP_FEE_BPS, type SwapQuote } from '../../domain/swap/constant-product.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { usdNumber } from '../http-views.js';
import {
  authErrors,
  errorBody,
  idempotencyKeyHeaders,
  insufficientNativeBody,
  pendingStatus,
} from './schemas.js';

const amountTokens = {
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  description: `Native-token base units (9 decimals) to sell: an integer from 1 to ${MAX_SWAP_TOKENS}; a string of digits keeps amounts above 2^53 exact`,
} as const;

/** Types only: the rules (integer, bound, decimals) are the domain's, with messages naming them. */
const swapBody = {
  type: 'object',
  required: ['amount_tokens'],
  additionalProperties: false,
  properties: {
    amount_tokens: amountTokens,
    min_amount_usdc: {
      anyOf: [{ type: 'number' }, { type: 'string' }],
      description:
        'The least USDC (dollars, at most 6 decimals) to accept: a quote below it is 409 slippage_exceeded and nothing moves',
    },
  },
  examples: [{ amount_tokens: '5000000000', min_amount_usdc: 0.45 }],
} as const;

/** The spec's answer; `status` only on 202. */
const swapped = {
  type: 'object',
  required: ['amount_usdc', 'swap_tx'],
  properties: {
    amount_usdc: { type: 'number', description: 'USDC received, in dollars' },
    swap_tx: { type: 'string', description: 'Signature of the swap transaction' },
    status: pendingStatus,
  },
} as const;

const quoteQuery = {
  type: 'object',
  required: ['amount_tokens'],
  properties: { amount_tokens: { type: 'string', description: amountTokens.description } },
} as const;

const quoteBody = {
  type: 'object',
  required: [
    'amount_tokens',
    'amount_usdc',
    'fee_tokens',
    'fee_bps',
    'price_impact_bps',
    'reserve_tokens',
    'reserve_usdc',
  ],
  properties: {
    amount_tokens: { type: 'string', description: 'Base units sold' },
    amount_usdc: { type: 'number', description: 'USDC the swap would pay now, in dollars' },
    fee_tokens: { type: 'string', description: 'The fee part of amount_tokens (30 bps, rounded up)' },
    fee_bps: { type: 'integer' },
    price_impact_bps: {
      type: 'integer',
      description: 'How far below the pool’s spot price the fee-free part is priced, in basis points',
    },
    reserve_tokens: { type: 'string', description: 'The pool’s native reserve now (base units)' },
    reserve_usdc: { type: 'number', description: 'The pool’s USDC reserve now, in dollars' },
  },
} as const;

export function swapQuoteView(quote: SwapQuote) {
  return {
    amount_tokens: quote.amountTokens.toString(),
    amount_usdc: usdNumber(quote.amountUsdcMicro),
    fee_tokens: quote.feeTokens.toString(),
    fee_bps: Number(SWAP_FEE_BPS),
    price_impact_bps: quote.priceImpactBps,
    reserve_tokens: quote.reservesBefore.nativeUnits.toString(),
    reserve_usdc: usdNumber(quote.reservesBefore.usdcMicro),
  };
}

/**
 * POST /swap-to-usdc (scope `send`, bucket `send`, Idempotency-Key) and GET /swap-quote (scope
 * `read`). The swap is committed with its signed transaction (outbox) and awaited like a send: 201
 * once the cluster executed it, 202 `pending` past WRITE_TIMEOUT_MS.
 */
export function registerSwapRoutes(api: FastifyInstance, deps: ApiDeps): void {
  api.post(
    '/swap-to-usdc',
    {
      config: { scope: 'send', bucket: 'send', idempotent: true },
      schema: {
        operationId: 'swapToUsdc',
        summary: 'Sell native tokens for USDC (the platform pool)',
        tags: ['money'],
        headers: idempotencyKeyHeaders,
        body: swapBody,
        response: {
          201: swapped,
          202: swapped,
          400: errorBody,
          402: insufficientNativeBody,
          409: errorBody,
          422: errorBody,
          503: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const swap = await swapToUsdc(deps, request.viewer!.accountId, request.body, request.idempotency);
      return reply.status(swap.settled === 'pending' ? 202 : 201).send({
        amount_usdc: usdNumber(swap.quote.amountUsdcMicro),
        swap_tx: swap.swapTx,
        ...(swap.settled === 'pending' ? { status: 'pending' } : {}),
      });
    },
  );

  typedRoutes(api).get(
    '/swap-quote',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getSwapQuote',
        summary: 'Quote a swap to USDC without making it',
        tags: ['money'],
        querystring: quoteQuery,
        response: { 200: quoteBody, 400: errorBody, 503: errorBody, ...authErrors },
      },
    },
    async (request) => swapQuoteView(await quoteSwap(deps, request.query.amount_tokens)),
  );
}
