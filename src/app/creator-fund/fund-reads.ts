import {
  earnedLegTotals,
  epochSummaryRows,
  fundShareRows,
} from '../../adapters/postgres/creator-fund-reads.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import { AppError } from '../../domain/errors.js';
import { paymentStatusOf, type PaymentStatus } from '../../domain/ledger/payment-state.js';

/** How an epoch stands: its plan's outcome and, once planned, its batches' outbox states. */
export type EpochStatus = 'sending' | 'paid' | 'partly_failed' | 'no_engagement' | 'unfunded';

export interface EpochView {
  start: Date;
  end: Date;
  /** Native base units. */
  budget: bigint;
  fundAvailable: bigint;
  /** What the batches pay (planned); a failed batch is reversed and left out here. */
  paidTotal: bigint;
  authorCount: number;
  status: EpochStatus;
  note: string;
  /** Each batch's current signature (its `swap_tx`), in batch order. */
  batchSignatures: string[];
}

export const MAX_EPOCHS_PAGE = 100;

/** The latest epochs, newest first (GraphQL creatorFundEpochs). */
export async function listEpochs(db: Db, limit: number): Promise<EpochView[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EPOCHS_PAGE) {
    throw new AppError('invalid_request', `limit must be 1 to ${MAX_EPOCHS_PAGE}`, { field: 'limit' });
  }
  const rows = await epochSummaryRows(db, limit);
  return rows.map((row) => ({
    start: row.epoch_start,
    end: row.epoch_end,
    budget: row.budget,
    fundAvailable: row.fund_available,
    paidTotal: row.paid_total - BigInt(row.failed_total),
    authorCount: row.author_count,
    status:
      row.outcome !== 'planned'
        ? row.outcome
        : row.failed > 0
          ? 'partly_failed'
          : row.open > 0
            ? 'sending'
            : 'paid',
    note: row.note,
    batchSignatures: row.signatures ?? [],
  }));
}

export interface Earnings {
  /** Shares of engagement with the viewer's posts (USDC, micro-USD) whose transaction confirmed. */
  directSettledMicro: bigint;
  /** ... whose transaction has not confirmed yet (held: not spendable). */
  directPendingMicro: bigint;
  /** Creator-fund payouts (native base units) confirmed on chain. */
  fundSettled: bigint;
  /** Creator-fund payouts signed or sent, not confirmed yet. */
  fundPending: bigint;
}

/**
 * What an account earned, by currency and by whether the chain confirmed it: the `earned` legs of
 * its ledger accounts (a USDC share of a reply, quote or repost; a native fund payout), by the
 * state of their movement's outbox row. A payment that failed on chain earned nothing (its legs
 * were reversed), so failed rows and reversals are left out.
 */
export async function accountEarnings(db: Db, accountId: string): Promise<Earnings> {
  const rows = await earnedLegTotals(db, accountId);
  const of = (currency: 'usdc' | 'native') => rows.find((row) => row.currency === currency);
  return {
    directSettledMicro: BigInt(of('usdc')?.settled ?? '0'),
    directPendingMicro: BigInt(of('usdc')?.pending ?? '0'),
    fundSettled: BigInt(of('native')?.settled ?? '0'),
    fundPending: BigInt(of('native')?.pending ?? '0'),
  };
}

/** One author's share of one epoch: what it was paid, from what score, by which transaction. */
export interface FundShare {
  epochStart: Date;
  /** Native base units paid to the author (planned; a failed batch was reversed: see `status`). */
  amount: bigint;
  /**
   * The author's score: its engagers' weighted engagement, each engager capped
   * (creator-fund-rules.ts scoreAuthors). The per-kind counts behind it are not recorded.
   */
  score: bigint;
  /** Every paid author's score in the epoch summed: `amount` is about budget · score / epochScore. */
  epochScore: bigint;
  batchIndex: number;
  /** The batch's current signature (its `swap_tx`, resolvable with GET /payments/{swap_tx}). */
  swapTx: string;
  /** The batch's outbox state, as every payment shows it. */
  status: PaymentStatus;
}

/**
 * `accountId`'s shares of the epochs starting at `epochStarts`, keyed by epoch start (ms): one
 * statement for any number of epochs (GraphQL CreatorFundEpoch.myShare batches a page's epochs).
 * An epoch the account was not paid in has no entry.
 */
export async function fundSharesOf(
  db: Db,
  accountId: string,
  epochStarts: readonly Date[],
): Promise<Map<number, FundShare>> {
  const rows = await fundShareRows(db, accountId, epochStarts);
  return new Map(
    rows.map((row) => [
      row.epoch_start.getTime(),
      {
        epochStart: row.epoch_start,
        amount: BigInt(row.amount),
        score: BigInt(row.score),
        epochScore: BigInt(row.epoch_score),
        batchIndex: row.batch_index,
        swapTx: row.signature,
        status: paymentStatusOf(row.status),
      },
    ]),
  );
}
