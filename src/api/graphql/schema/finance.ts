import {
  chainTransaction,
  cursorOf,
  parseDay,
  reconciliationExceptions,
  reconciliationSummary,
  type ChainTransactionView,
  type DaySummary,
  type PaymentStateCounts,
  type ReconciliationRow,
} from '../../../app/analytics/analytics-reads.js';
import { AppError } from '../../../domain/errors.js';
import {
  RECONCILIATION_STATUSES,
  type ReconciliationStatus,
} from '../../../domain/reconciliation/reconciliation.js';
import { builder } from '../builder.js';

/*
 * Finance (role finance or admin, through a `read` key): daily ledger-vs-chain totals, the
 * exception list and one transaction's drill-down (what creators read, finance and admin for any
 * creator: creator-analytics.ts). Served from ClickHouse
 * (src/app/indexer), except the payments by outbox state and the NOT_FINALIZED exceptions, read
 * from the outbox in Postgres (src/app/analytics/analytics-reads.ts says why).
 */

const MAX_EXCEPTIONS_PAGE = 100;

/**
 * The finance fields' check, as their REST twin (GET /finance/reconciliation) makes it: a key
 * holding `read`, of a finance or admin account. The role alone would let a finance account's
 * delegated `engage` key read the books. `read` first: a key without it is told so, as REST does.
 */
const FINANCE_READ = { $all: { read: true, finance: true } } as const;

const StatusEnum = builder.enumType('ReconciliationStatus', {
  values: Object.fromEntries(RECONCILIATION_STATUSES.map((s) => [s.toUpperCase(), { value: s }])) as Record<
    Uppercase<ReconciliationStatus>,
    { value: ReconciliationStatus }
  >,
});

const ExceptionCounts = builder
  .objectRef<DaySummary['exceptions']>('ReconciliationExceptionCounts')
  .implement({
    fields: (t) => ({
      amountMismatch: t.exposeInt('amount_mismatch'),
      wrongParty: t.exposeInt('wrong_party'),
      failedOnChain: t.exposeInt('failed_on_chain'),
      missing: t.exposeInt('missing'),
      pending: t.exposeInt('pending'),
      unexplained: t.exposeInt('unexplained'),
      postCloseDifference: t.exposeInt('post_close_difference', {
        description:
          'Verdicts of movements in a closed period that differ from the frozen ones, counted on the day they were found.',
      }),
      balanceMismatch: t.exposeInt('balance_mismatch', {
        description:
          "Token accounts whose chain balance differed from their ledger balance + pending in the day's balance check (twice, the same).",
      }),
      notFinalized: t.exposeInt('not_finalized', {
        description:
          "Payments still not finalized 5 minutes after signing, from the outbox (Postgres) as it is now; the other counts are the reconciler's verdicts.",
      }),
    }),
  });

const PaymentCounts = builder.objectRef<PaymentStateCounts>('ReconciliationPaymentCounts').implement({
  description: "A ledger day's payments by outbox state, as the outbox (Postgres) is now.",
  fields: (t) => ({
    pending: t.exposeInt('pending', { description: 'Signed or sent, not seen confirmed yet.' }),
    confirmed: t.exposeInt('confirmed'),
    finalized: t.exposeInt('finalized'),
    failed: t.exposeInt('failed', { description: 'Landed with an error; the ledger reversed it.' }),
  }),
});

const ReconciliationDay = builder.objectRef<DaySummary>('ReconciliationDay').implement({
  description:
    "One ledger day: what the ledger moved, what the chain moved for it, the verdicts' counts and the payments by outbox state.",
  fields: (t) => ({
    day: t.exposeString('day'),
    ledgerTotalUsdMicro: t.field({ type: 'MicroUsd', resolve: (d) => d.ledgerTotalMicro }),
    chainTotalUsdMicro: t.field({ type: 'MicroUsd', resolve: (d) => d.chainTotalMicro }),
    matched: t.exposeInt('matched'),
    exceptions: t.field({ type: ExceptionCounts, resolve: (d) => d.exceptions }),
    payments: t.field({ type: PaymentCounts, resolve: (d) => d.payments }),
  }),
});

const ReconciliationEntry = builder.objectRef<ReconciliationRow>('ReconciliationEntry').implement({
  fields: (t) => ({
    movementId: t.exposeID('movementId'),
    signature: t.exposeString('signature'),
    day: t.exposeString('day'),
    status: t.field({ type: StatusEnum, resolve: (r) => r.status }),
    ledgerAmountUsdMicro: t.field({ type: 'MicroUsd', resolve: (r) => r.ledgerAmountMicro }),
    chainAmountUsdMicro: t.field({
      type: 'MicroUsd',
      description:
        "0 for NOT_FINALIZED (nothing final on chain yet; the reconciler's verdict is its own entry).",
      resolve: (r) => r.chainAmountMicro,
    }),
    commitment: t.exposeString('commitment', {
      description:
        'confirmed or finalized; empty when not found. NOT_FINALIZED: confirmed, or empty while the payment is signed or sent.',
    }),
    detail: t.exposeString('detail'),
    checkedAt: t.exposeString('checkedAt'),
  }),
});

const ReconciliationConnection = builder.connectionObject({
  type: ReconciliationEntry,
  name: 'ReconciliationExceptionConnection',
  edgesNullable: false,
  nodeNullable: false,
});

const TokenMovement = builder
  .objectRef<ChainTransactionView['movements'][number]>('TokenMovement')
  .implement({
    fields: (t) => ({
      owner: t.exposeString('owner'),
      tokenAccount: t.exposeString('tokenAccount'),
      mint: t.exposeString('mint'),
      amount: t.field({
        type: 'MicroUsd',
        description: 'Signed base units of the mint (micro-USD for USDC): negative leaves the account.',
        resolve: (m) => m.amountMicro,
      }),
    }),
  });

const ChainTransaction = builder.objectRef<ChainTransactionView>('ChainTransaction').implement({
  fields: (t) => ({
    signature: t.exposeString('signature'),
    slot: t.exposeInt('slot'),
    blockTime: t.exposeString('blockTime'),
    fee: t.exposeInt('fee', { description: 'Lamports.' }),
    status: t.exposeString('status', { description: 'success, failed, or not_found (never landed).' }),
    error: t.exposeString('error'),
    movements: t.field({ type: [TokenMovement], resolve: (tx) => tx.movements }),
    reconciliation: t.field({
      type: ReconciliationEntry,
      nullable: true,
      resolve: (tx) => tx.reconciliation,
    }),
  }),
});

builder.queryFields((t) => ({
  reconciliationSummary: t.field({
    type: [ReconciliationDay],
    description:
      'Per ledger day from..to (YYYY-MM-DD, inclusive). Needs `read` and the finance or admin role.',
    authScopes: FINANCE_READ,
    args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) =>
      reconciliationSummary(ctx.deps, parseDay(args.from, 'from'), parseDay(args.to, 'to')),
  }),
  reconciliationExceptions: t.connection(
    {
      type: ReconciliationEntry,
      description: `Every verdict but matched (or one status), newest day first (within a day NOT_FINALIZED first: payments the outbox has not seen finalized 5 minutes after signing, read from Postgres now); first 1 to ${MAX_EXCEPTIONS_PAGE}. Needs \`read\` and the finance or admin role.`,
      authScopes: FINANCE_READ,
      args: { status: t.arg({ type: StatusEnum }), day: t.arg.string() },
      resolve: async (_root, args, ctx) => {
        const first = args.first ?? 20;
        if (first < 1 || first > MAX_EXCEPTIONS_PAGE) {
          throw new AppError('invalid_request', `first must be 1 to ${MAX_EXCEPTIONS_PAGE}`, {
            field: 'first',
          });
        }
        const page = await reconciliationExceptions(ctx.deps, {
          ...(args.status ? { status: args.status } : {}),
          ...(args.day ? { day: parseDay(args.day, 'day') } : {}),
          first,
          ...(args.after ? { after: args.after } : {}),
        });
        return {
          edges: page.rows.map((row) => ({ node: row, cursor: cursorOf(ctx.deps, row) })),
          pageInfo: {
            hasNextPage: page.hasMore,
            hasPreviousPage: false,
            startCursor: page.rows[0] ? cursorOf(ctx.deps, page.rows[0]) : null,
            endCursor: page.rows.at(-1) ? cursorOf(ctx.deps, page.rows.at(-1)!) : null,
          },
        };
      },
    },
    ReconciliationConnection,
  ),
  chainTransaction: t.field({
    type: ChainTransaction,
    nullable: true,
    description:
      'A transaction as the indexer saw it: movements and reconciliation. Needs `read` and the finance or admin role.',
    authScopes: FINANCE_READ,
    args: { signature: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => chainTransaction(ctx.deps.clickhouse, args.signature),
  }),
}));
