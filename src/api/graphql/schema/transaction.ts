import { paymentBySwapTx, transactionHistory } from '../../../app/transaction-history-page.js';
import { AppError } from '../../../domain/errors.js';
import { HISTORY_MAX_LIMIT, type Transaction } from '../../../domain/ledger/transaction-history.js';
import { formatMicroUsd } from '../../../domain/money/usd.js';
import { builder } from '../builder.js';
import { ViewerRef } from './account.js';

const TransactionTypeEnum = builder.enumType('TransactionType', {
  description:
    'The spec’s types plus DEPOSIT (USDC in), REFUND (a payment that failed on chain) and SWAP (native tokens sold for USDC; the amount is the USDC received).',
  values: {
    POST: { value: 'post' },
    REPOST: { value: 'repost' },
    EARN: { value: 'earn' },
    SEND: { value: 'send' },
    RECEIVE: { value: 'receive' },
    DEPOSIT: { value: 'deposit' },
    REFUND: { value: 'refund' },
    SWAP: { value: 'swap' },
  } as const,
});

export const TransactionStatusEnum = builder.enumType('TransactionStatus', {
  description:
    'Where the chain transaction of a money move is now (REST `status`). Unlike PaymentStatus (how far a payment had got when its mutation answered), this is read when asked.',
  values: {
    PENDING: {
      value: 'pending',
      description: 'Signed or sent, not confirmed yet: its credits to others are held.',
    },
    CONFIRMED: {
      value: 'confirmed',
      description:
        'Confirmed on chain; followed to finalized (a payment the chain loses meanwhile is sent again and shows PENDING). A deposit is credited once seen confirmed and followed to finalized too.',
    },
    FINALIZED: { value: 'finalized', description: 'Finalized on chain.' },
    FAILED: {
      value: 'failed',
      description: 'Failed on chain; its legs reversed (the history holds the refund).',
    },
  } as const,
});

/** One ledger movement as the viewer saw it (REST: the spec's Transaction). */
export const TransactionRef = builder.objectRef<Transaction>('Transaction').implement({
  fields: (t) => ({
    id: t.exposeString('id', { description: 'The ledger movement.' }),
    type: t.expose('type', { type: TransactionTypeEnum }),
    amountUsd: t.string({
      description: 'Signed decimal dollars ("-1", "0.5"): negative when the viewer spent. Never a float.',
      resolve: (transaction) => formatMicroUsd(transaction.amountMicro),
    }),
    description: t.exposeString('description'),
    swapTx: t.exposeString('swapTx', {
      nullable: true,
      description:
        'Solana signature; for a refund, the failed payment’s. Null only for a movement without one.',
    }),
    relatedPostId: t.exposeString('relatedPostId', { nullable: true }),
    counterparty: t.exposeString('counterparty', {
      nullable: true,
      description: 'Handle of the other party of a send.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    status: t.field({
      type: TransactionStatusEnum,
      nullable: true,
      description:
        'State of the swapTx transaction (an earning: of the payment that paid it; a refund: FAILED). Null only without a swapTx.',
      resolve: (transaction) => transaction.status,
    }),
    slot: t.exposeInt('slot', {
      nullable: true,
      description:
        'The slot the chain last reported the transaction in; null before it ran (a deposit: until finalized).',
    }),
    confirmedAt: t.expose('confirmedAt', {
      type: 'DateTime',
      nullable: true,
      description:
        'When the transaction was seen confirmed (a deposit: credited); null until then, and again while a payment the chain lost is sent again.',
    }),
    finalizedAt: t.expose('finalizedAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When the transaction was seen finalized.',
    }),
  }),
});

builder.queryFields((t) => ({
  payment: t.field({
    type: TransactionRef,
    nullable: true,
    description:
      'One payment of the viewer by its swapTx (or a signature it had before a re-sign), as its history shows it, with its state (REST GET /payments/{swap_tx}). Null when it is not one of the viewer’s, as `post` and `user` answer for what they do not show. Needs `read`.',
    authScopes: { read: true },
    args: { swapTx: t.arg.string({ required: true }) },
    resolve: async (_root, { swapTx }, ctx) => {
      try {
        return await paymentBySwapTx(ctx.deps, ctx.viewer!.accountId, swapTx);
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') return null;
        throw error;
      }
    },
  }),
}));

const TransactionConnection = builder.connectionObject({
  type: TransactionRef,
  name: 'TransactionConnection',
  edgesNullable: false,
  nodeNullable: false,
});

// On Viewer only: a history is its owner's business. The `viewer` field already spent `read`.
builder.objectField(ViewerRef, 'transactions', (t) =>
  t.connection(
    {
      type: TransactionRef,
      description: `The viewer's transaction history (REST GET /me/transactions), newest first; \`first\` 1 to ${HISTORY_MAX_LIMIT}, default 20.`,
      resolve: async (account, args, ctx) => {
        if (args.last != null || args.before != null)
          throw new AppError('invalid_request', 'The history pages forward only: use first and after');
        const page = await transactionHistory(
          ctx.deps,
          account.id,
          { limit: args.first, cursor: args.after },
          { limit: 'first', cursor: 'after' },
        );
        return {
          edges: page.items.map((item) => ({ node: item.transaction, cursor: item.cursor })),
          pageInfo: {
            hasNextPage: page.hasMore,
            // Keyset pages cannot tell cheaply whether anything is newer than `after` (Relay allows false).
            hasPreviousPage: false,
            startCursor: page.items[0]?.cursor ?? null,
            endCursor: page.items.at(-1)?.cursor ?? null,
          },
        };
      },
    },
    TransactionConnection,
  ),
);
