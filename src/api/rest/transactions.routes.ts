import type { FastifyInstance } from 'fastify';
import { transactionHistory, type TransactionHistoryAppDeps } from '../../app/transaction-history-page.js';
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

/** The spec's Transaction; dollars as a JSON number only here, at the edge, and without float noise. */
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
  };
}

/** GET /me/transactions: the caller's ledger history, newest first, keyset-paged by signed cursor. */
export function registerTransactionRoutes(
  api: FastifyInstance,
  deps: ApiDeps & TransactionHistoryAppDeps,
): void {
  api.get<{ Querystring: { limit?: string; cursor?: string } }>(
    '/me/transactions',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
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
}
