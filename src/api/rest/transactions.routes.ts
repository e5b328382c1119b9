import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import {
  paymentBySwapTx,
  transactionHistory,
  type TransactionHistoryAppDeps,
} from '../../app/transaction-history-page.js';
import { PAYMENT_STATUSES } from '../../domain/ledger/payment-state.js';
import type { Transaction } from '../../domain/ledger/transaction-history.js';
import { usdNumber } from '../http-views.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { authErrors, errorBody } from './schemas.js';

const historyQuery = {
  type: 'object',
  properties: {
    limit: { type: 'string', description: 'Integer from 1 to 50; default 20' },
    cursor: { type: 'string', description: 'next_cursor of the previous page; omit for the first page' },
  },
} as const;

const nullableString = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const transaction = {
  type: 'object',
  required: [
    'id',
    'type',
    'amount_usd',
    'description',
    'swap_tx',
    'related_post_id',
    'counterparty',
    'created_at',
    'status',
    'slot',
    'confirmed_at',
    'finalized_at',
  ],
  properties: {
    id: { type: 'string', description: 'The ledger movement' },
    type: {
      type: 'string',
      enum: ['post', 'repost', 'earn', 'send', 'receive', 'deposit', 'refund', 'swap'],
      description:
        'The spec’s values, plus deposit (USDC in), refund (a payment that failed on chain) and swap (native tokens sold for USDC: amount_usd is the USDC received)',
    },
    amount_usd: { type: 'number', description: 'Dollars; negative when the account spent' },
    description: { type: 'string' },
    swap_tx: {
      ...nullableString,
      description:
        'Solana signature; for a refund, the failed payment’s; null only for a movement without one',
    },
    related_post_id: nullableString,
    counterparty: { ...nullableString, description: 'Handle of the other party of a send' },
    created_at: { type: 'string', format: 'date-time' },
    // Ours (the spec's Transaction has none of these names): the state of the chain transaction.
    status: {
      type: ['string', 'null'],
      enum: [...PAYMENT_STATUSES, null],
      description:
        'Our addition: the state of the swap_tx transaction (an earning: of the payment that paid it; a refund: failed). pending: signed or sent, not confirmed yet; confirmed; finalized; failed: failed on chain, its legs reversed (see the refund). A deposit is credited once seen confirmed (confirmed), then followed to finalized. Null only without a swap_tx',
    },
    slot: {
      type: ['integer', 'null'],
      description:
        'Our addition: the slot the chain last reported the transaction in; null before it ran (a deposit: until finalized)',
    },
    confirmed_at: {
      ...nullableTime,
      description:
        'Our addition: when the transaction was seen confirmed (a deposit: credited); null until then, and again while a payment the chain lost is sent again',
    },
    finalized_at: { ...nullableTime, description: 'Our addition: when the transaction was seen finalized' },
  },
} as const;

const historyPage = {
  type: 'object',
  required: ['transactions', 'has_more'],
  properties: {
    transactions: { type: 'array', items: transaction },
    has_more: { type: 'boolean' },
    next_cursor: { type: 'string', description: 'Present only when has_more' },
  },
} as const;

const paymentParams = {
  type: 'object',
  required: ['swap_tx'],
  properties: {
    swap_tx: {
      type: 'string',
      description:
        'A signature of the payment: its swap_tx, or one it had before a re-sign. Anything else (not a signature, not one of the caller’s payments) is 404',
    },
  },
} as const;

/**
 * The spec's Transaction plus the state of its chain transaction; dollars as a JSON number only
 * here, at the edge, and without float noise.
 */
function transactionView(t: Transaction) {
  return {
    id: t.id,
    type: t.type,
    amount_usd: usdNumber(t.amountMicro),
    description: t.description,
    swap_tx: t.swapTx,
    related_post_id: t.relatedPostId,
    counterparty: t.counterparty,
    created_at: t.createdAt.toISOString(),
    status: t.status,
    slot: t.slot,
    confirmed_at: t.confirmedAt?.toISOString() ?? null,
    finalized_at: t.finalizedAt?.toISOString() ?? null,
  };
}

/**
 * GET /me/transactions: the caller's ledger history, newest first, keyset-paged by signed cursor.
 * GET /payments/{swap_tx}: one of its entries by signature, to follow a payment to finalized.
 * Both: scope `read`, bucket `read`.
 */
export function registerTransactionRoutes(
  api: FastifyInstance,
  deps: ApiDeps & TransactionHistoryAppDeps,
): void {
  typedRoutes(api).get(
    '/me/transactions',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listTransactions',
        summary: 'Transaction history (newest first)',
        tags: ['money'],
        querystring: historyQuery,
        response: { 200: historyPage, 400: errorBody, ...authErrors },
      },
    },
    async (request) => {
      // deps is read only here: the OpenAPI printer registers routes with deps that refuse use.
      const page = await transactionHistory(deps, request.viewer!.accountId, request.query);
      return {
        transactions: page.items.map((item) => transactionView(item.transaction)),
        has_more: page.hasMore,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      };
    },
  );

  typedRoutes(api).get(
    '/payments/:swap_tx',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getPayment',
        summary:
          'One payment of the caller’s by swap_tx, with its state (pending, confirmed, finalized, failed)',
        tags: ['money'],
        params: paymentParams,
        response: { 200: transaction, 404: errorBody, ...authErrors },
      },
    },
    async (request) =>
      transactionView(await paymentBySwapTx(deps, request.viewer!.accountId, request.params.swap_tx)),
  );
}
