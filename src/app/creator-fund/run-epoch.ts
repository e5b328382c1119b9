import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { ChainTransactionStatus } from '../../adapters/postgres/database.js';
import { recordMovement } from '../../adapters/postgres/ledger.repository.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Leg } from '../../domain/ledger/ledger.js';
import {
  endedEpochs,
  formatNative,
  likers,
  likesFromPayingEngagers,
  scoreAuthors,
  splitBudget,
  type EpochWindow,
} from '../../domain/payouts/creator-fund-rules.js';
import { cutIntoBatches } from '../../domain/payouts/payout-batches.js';
import type { WritePathDeps } from '../write-path/write-path-deps.js';
import { insertOutboxPayment } from '../write-path/payment-transaction.js';
import { settlePayment, type SettlementStatus } from '../write-path/settle-payment.js';
import {
  epochEngagement,
  eventsShippedThrough,
  payingEngagers,
  unpaidEngagement,
} from './engagement-source.js';
import {
  CREATING_TRANSFERS_PER_BATCH,
  fundChainBalance,
  ownersWithoutNativeAccount,
  payoutMemo,
  signPayoutBatch,
  TRANSFERS_PER_BATCH,
} from './payout-transaction.js';

export interface CreatorFundDeps extends WritePathDeps {
  clickhouse: ClickHouse;
  metrics: Metrics;
  logger: Logger;
  config: { CREATOR_FUND_EPOCH_BUDGET: bigint; CREATOR_FUND_EPOCH_MS: number };
}

/**
 * Ended epochs a scheduled run looks at (oldest first): a worker down for a while catches up on
 * up to this many, and an epoch the empty fund could not pay is tried again within this window.
 */
export const CATCH_UP_EPOCHS = 24;

export type EpochOutcome = 'planned' | 'no_engagement' | 'unfunded';

export interface EpochPlan {
  epochStart: Date;
  epochEnd: Date;
  outcome: EpochOutcome;
  /** True when an earlier run had planned it: nothing was computed or written now. */
  alreadyPlanned: boolean;
  budget: bigint;
  fundAvailable: bigint;
  paidTotal: bigint;
  authorCount: number;
  note: string;
  batches: Array<{
    index: number;
    chainTransactionId: string;
    transfers: number;
    total: bigint;
    /** The outbox row's status and current signature (`swap_tx`). */
    status: ChainTransactionStatus;
    signature: string;
  }>;
}

/** The epoch's events are not all in ClickHouse yet (a transaction open, the shipper behind). */
export class EpochNotReadyError extends Error {
  override name = 'EpochNotReadyError';
}

/** Serialises planners across processes: each reads the fund's balance and spends from it. */
const PLAN_LOCK = 'ledgerfeed:creator-fund:plan';

/**
 * Plans one epoch exactly once. An epoch already planned (or found with nobody to pay) is returned
 * as it was; an `unfunded` one is planned again (the fund may have been topped up).
 *
 * Planning reads the epoch's engagement from ClickHouse (only once the shipper has shipped every
 * event up to the epoch's end), drops the likes of accounts that never paid for anything
 * (likesFromPayingEngagers), scores it, splits the budget (capped at what the fund holds), and
 * then, in ONE Postgres transaction under an advisory lock: the epoch row, every author's payout
 * and batch, each batch's ledger movement (`fund_payout`: creator_fund(native) -> authors(native),
 * the credits held until the chain confirms) and its signed transaction in the outbox. Nothing is
 * sent here. A crash before the commit leaves nothing; after it, the plan is found and only its
 * outbox rows are driven (by the payments worker or settleEpoch), so no author is paid twice.
 */
export async function planEpoch(deps: CreatorFundDeps, epoch: EpochWindow): Promise<EpochPlan> {
  const existing = await loadPlan(deps, epoch.start);
  if (existing && existing.outcome !== 'unfunded') return existing;
  if (!(await eventsShippedThrough(deps.db, epoch.end))) {
    throw new EpochNotReadyError(
      `epoch ${epoch.start.toISOString()}: events up to ${epoch.end.toISOString()} are not all in ClickHouse yet`,
    );
  }
  const paid = await unpaidEngagement(deps.db, epoch);
  if (paid.unsettled > 0) {
    throw new EpochNotReadyError(
      `epoch ${epoch.start.toISOString()}: ${paid.unsettled} paid engagement payment(s) not settled on chain yet`,
    );
  }
  const engagement = await epochEngagement(deps.clickhouse, epoch, paid.failedEventIds);
  // Likes count only from accounts that paid for something (sign-ups and likes are free: farms).
  const liking = await payingEngagers(deps.db, likers(engagement), epoch.end);
  if (liking.unsettled > 0) {
    throw new EpochNotReadyError(
      `epoch ${epoch.start.toISOString()}: ${liking.unsettled} liker(s) whose only payment is not settled on chain yet`,
    );
  }
  const scores = scoreAuthors(likesFromPayingEngagers(engagement, liking.paying));
  const platform = await deps.bootstrapChain();
  const wallets = new Map<string, string>();
  if (scores.length > 0) {
    const rows = await deps.db
      .selectFrom('accounts')
      .select(['id', 'wallet_address'])
      .where(
        'id',
        'in',
        scores.map((s) => s.authorId),
      )
      .execute();
    for (const row of rows) if (row.wallet_address) wallets.set(row.id, row.wallet_address);
  }
  // An author without a custodial wallet cannot receive tokens (none exist today): left out.
  const payable = scores.filter((s) => wallets.has(s.authorId));
  const budget = deps.config.CREATOR_FUND_EPOCH_BUDGET;
  // Wallets never paid native tokens have no native token account: their batches create it.
  const unopened = await ownersWithoutNativeAccount(
    deps.rpc,
    platform,
    payable.map((s) => wallets.get(s.authorId)!),
  );
  const needsAccount = (authorId: string) => unopened.has(wallets.get(authorId)!);

  const planned = await deps.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${PLAN_LOCK}))`.execute(trx);
    const again = await trx
      .selectFrom('creator_fund_epochs')
      .select('outcome')
      .where('epoch_start', '=', epoch.start)
      .executeTakeFirst();
    if (again && again.outcome !== 'unfunded') return undefined; // another planner won
    if (again) await trx.deleteFrom('creator_fund_epochs').where('epoch_start', '=', epoch.start).execute();

    // What the fund can pay: its balance on chain less the batches planned but not yet executed
    // (they will take their tokens when they land). `sent` ones may already show in the balance:
    // subtracting them too under-pays while they are in flight, never over-spends.
    const inFlight = await trx
      .selectFrom('creator_fund_batches as b')
      .innerJoin('chain_transactions as ct', 'ct.id', 'b.chain_transaction_id')
      .select(sql<string>`coalesce(sum(b.total), 0)::text`.as('total'))
      .where('ct.status', 'in', ['signed', 'sent'])
      .executeTakeFirstOrThrow();
    const onChain = await fundChainBalance(deps.rpc, platform);
    const available = maxBig(0n, onChain - BigInt(inFlight.total));
    const payTotal = available < budget ? available : budget;
    const shares = splitBudget(payTotal, payable);
    const outcome: EpochOutcome =
      payable.length === 0 ? 'no_engagement' : shares.length === 0 ? 'unfunded' : 'planned';
    const paidTotal = shares.reduce((acc, s) => acc + s.amount, 0n);
    const note =
      outcome === 'no_engagement'
        ? 'no engagement from other accounts in this epoch'
        : outcome === 'unfunded'
          ? `the creator fund is empty (${formatNative(onChain)} on chain, ${formatNative(BigInt(inFlight.total))} in flight): nothing paid`
          : paidTotal < budget
            ? `the creator fund is short: paid ${formatNative(paidTotal)} of the ${formatNative(budget)} budget`
            : '';
    await trx
      .insertInto('creator_fund_epochs')
      .values({
        epoch_start: epoch.start,
        epoch_end: epoch.end,
        budget,
        fund_available: available,
        paid_total: paidTotal,
        author_count: shares.length,
        outcome,
        note,
      })
      .execute();

    const batches: EpochPlan['batches'] = [];
    // Authors whose account exists first, 16 a batch; then those whose account each transfer
    // creates, 8 a batch (a create takes ~42 bytes of the 1232).
    const cut = [
      ...cutIntoBatches(
        shares.filter((s) => !needsAccount(s.authorId)),
        TRANSFERS_PER_BATCH,
      ),
      ...cutIntoBatches(
        shares.filter((s) => needsAccount(s.authorId)),
        CREATING_TRANSFERS_PER_BATCH,
      ),
    ];
    for (const [index, batch] of cut.entries()) {
      const total = batch.reduce((acc, s) => acc + s.amount, 0n);
      const payment = await signPayoutBatch(
        deps.rpc,
        platform,
        batch.map((s) => ({
          owner: new PublicKey(wallets.get(s.authorId)!),
          amount: s.amount,
          createAccount: needsAccount(s.authorId),
        })),
        payoutMemo(epoch.start, index),
      );
      const legs: Leg[] = [
        { account: { kind: 'creator_fund', currency: 'native' }, units: -total, counts: 'none' },
        ...batch.map((s): Leg => ({
          account: { kind: 'user', accountId: s.authorId, currency: 'native' },
          units: s.amount,
          counts: 'earned',
        })),
      ];
      const { movementId } = await recordMovement(trx, {
        kind: 'fund_payout',
        legs,
        pending: 'hold',
        idempotencyKey: `fund:${epoch.start.toISOString()}:${index}`,
      });
      const chainTransactionId = await insertOutboxPayment(trx, movementId, payment, {
        type: 'fund.payout',
        // amount_micro is micro-USD: a native payout moves no dollars. The tokens are in the payload.
        payload: JSON.stringify({
          epoch_start: epoch.start.toISOString(),
          batch_index: index,
          total_native: total.toString(),
          transfers: batch.length,
        }),
      });
      await trx
        .insertInto('creator_fund_batches')
        .values({
          epoch_start: epoch.start,
          batch_index: index,
          movement_id: movementId,
          chain_transaction_id: chainTransactionId,
          total,
          transfers: batch.length,
        })
        .execute();
      await trx
        .insertInto('creator_fund_payouts')
        .values(
          batch.map((s) => ({
            epoch_start: epoch.start,
            account_id: s.authorId,
            score: s.score,
            amount: s.amount,
            batch_index: index,
          })),
        )
        .execute();
      batches.push({
        index,
        chainTransactionId,
        transfers: batch.length,
        total,
        status: 'signed',
        signature: payment.signature,
      });
    }
    return { outcome, budget, available, paidTotal, authorCount: shares.length, note, batches, onChain };
  });
  if (!planned) return (await loadPlan(deps, epoch.start))!;

  const log = deps.logger.child({ epoch: epoch.start.toISOString() });
  const tokens = (units: bigint) => Number(formatNative(units));
  deps.metrics.creatorFundEpochs.inc({ outcome: planned.outcome });
  deps.metrics.creatorFundAvailableTokens.set(tokens(planned.available));
  if (planned.outcome === 'planned') {
    deps.metrics.creatorFundPaidTokens.inc(tokens(planned.paidTotal));
    log.info(
      `creator fund: epoch planned, ${formatNative(planned.paidTotal)} native to ${planned.authorCount} author(s) in ${planned.batches.length} batch(es)`,
    );
  }
  if (
    planned.outcome === 'unfunded' ||
    (planned.outcome === 'planned' && planned.paidTotal < planned.budget)
  ) {
    deps.metrics.creatorFundUnderfunded.inc({ kind: planned.outcome === 'unfunded' ? 'empty' : 'short' });
    log.warn(
      { budget: planned.budget.toString(), available: planned.available.toString() },
      `creator fund: ${planned.note}`,
    );
  }
  if (planned.outcome === 'no_engagement') log.info(`creator fund: ${planned.note}`);
  return {
    epochStart: epoch.start,
    epochEnd: epoch.end,
    outcome: planned.outcome,
    alreadyPlanned: false,
    budget: planned.budget,
    fundAvailable: planned.available,
    paidTotal: planned.paidTotal,
    authorCount: planned.authorCount,
    note: planned.note,
    batches: planned.batches,
  };
}

/** The recorded plan of an epoch, if any. */
export async function loadPlan(
  deps: Pick<CreatorFundDeps, 'db'>,
  epochStart: Date,
): Promise<EpochPlan | undefined> {
  const row = await deps.db
    .selectFrom('creator_fund_epochs')
    .selectAll()
    .where('epoch_start', '=', epochStart)
    .executeTakeFirst();
  if (!row) return undefined;
  const batches = await deps.db
    .selectFrom('creator_fund_batches as b')
    .innerJoin('chain_transactions as ct', 'ct.id', 'b.chain_transaction_id')
    .select([
      'b.batch_index',
      'b.chain_transaction_id',
      'b.transfers',
      'b.total',
      'ct.status',
      'ct.signature',
    ])
    .where('b.epoch_start', '=', epochStart)
    .orderBy('b.batch_index')
    .execute();
  return {
    epochStart: row.epoch_start,
    epochEnd: row.epoch_end,
    outcome: row.outcome,
    alreadyPlanned: true,
    budget: row.budget,
    fundAvailable: row.fund_available,
    paidTotal: row.paid_total,
    authorCount: row.author_count,
    note: row.note,
    batches: batches.map((b) => ({
      index: b.batch_index,
      chainTransactionId: b.chain_transaction_id,
      transfers: b.transfers,
      total: b.total,
      status: b.status,
      signature: b.signature,
    })),
  };
}

/**
 * Drives every unfinished batch of a planned epoch to its end in this process, one after the
 * other (the CLI's way; the worker enqueues them on the payments queue instead). Each batch is an
 * ordinary outbox row: settlePayment sends, re-sends, re-signs or reverses it exactly as it does
 * a paid post, and is safe to run beside a payments worker doing the same.
 */
export async function settleEpoch(
  deps: CreatorFundDeps,
  plan: EpochPlan,
  onBatch?: (index: number, status: SettlementStatus) => void,
): Promise<SettlementStatus[]> {
  const statuses: SettlementStatus[] = [];
  for (const batch of plan.batches) {
    // settlePayment returns at once for a row that already reached its end.
    const status = await settlePayment(deps, batch.chainTransactionId);
    onBatch?.(batch.index, status);
    statuses.push(status);
  }
  return statuses;
}

/**
 * The scheduled job: plans every ended epoch of the catch-up window that is not planned yet (or
 * was unfunded), oldest first, and hands their batches to the payments queue (job ids derive from
 * the outbox row: enqueueing again is harmless). Stops at the first epoch whose events are not all
 * in ClickHouse yet and throws, so the queue retries the job a little later.
 */
export async function runDueEpochs(
  deps: CreatorFundDeps & { payments: { enqueue(chainTransactionId: string): Promise<unknown> } },
  now = new Date(),
): Promise<EpochPlan[]> {
  const plans: EpochPlan[] = [];
  for (const epoch of endedEpochs(now, deps.config.CREATOR_FUND_EPOCH_MS, CATCH_UP_EPOCHS)) {
    const plan = await planEpoch(deps, epoch);
    // Unfinished batches (just planned, or left by a run that died before enqueueing them).
    for (const batch of plan.batches) {
      if (batch.status === 'signed' || batch.status === 'sent')
        await deps.payments.enqueue(batch.chainTransactionId);
    }
    plans.push(plan);
  }
  return plans;
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
