import { PublicKey } from '@solana/web3.js';
import type { Logger } from 'pino';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import {
  deleteEpoch,
  epochBatchRows,
  epochOutcome,
  epochRow,
  inFlightPayoutTotal,
  inPlanningTransaction,
  insertEpoch,
  insertPayoutBatch,
  walletAddresses,
} from '../../adapters/postgres/creator-fund.repository.js';
import type { ChainTransactionStatus } from '../../adapters/postgres/database.js';
import { recordMovement } from '../../adapters/postgres/ledger.repository.js';
import type { Tx } from '../../adapters/postgres/tx.js';
import type { PlatformChain } from '../../adapters/solana/index.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Leg } from '../../domain/ledger/ledger.js';
import {
  endedEpochs,
  formatNative,
  likers,
  likesFromPayingEngagers,
  scoreAuthors,
  splitBudget,
  type AuthorScore,
  type AuthorShare,
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
  const scores = await scoreEpoch(deps, epoch);
  const platform = await deps.bootstrapChain();
  const { payable, recipients } = await payableAuthors(deps, platform, scores);

  const planned = await inPlanningTransaction(deps.db, async (tx) => {
    const again = await epochOutcome(tx, epoch.start);
    if (again && again !== 'unfunded') return undefined; // another planner won
    if (again) await deleteEpoch(tx, epoch.start);
    const fund = await fundBalance(deps, tx, platform);
    const split = splitEpochBudget(deps.config.CREATOR_FUND_EPOCH_BUDGET, fund, payable);
    await insertEpoch(tx, {
      epochStart: epoch.start,
      epochEnd: epoch.end,
      budget: split.budget,
      fundAvailable: split.available,
      paidTotal: split.paidTotal,
      authorCount: split.authorCount,
      outcome: split.outcome,
      note: split.note,
    });
    const batches: EpochPlan['batches'] = [];
    for (const [index, batch] of cutPayoutBatches(split.shares, recipients).entries()) {
      batches.push(await planBatch(deps, tx, platform, { epoch, index, batch, recipients }));
    }
    return { ...split, batches };
  });
  if (!planned) return (await loadPlan(deps, epoch.start))!;

  reportPlanned(deps, epoch, planned);
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

/**
 * The epoch's author scores, once everything they depend on has settled: every event shipped to
 * ClickHouse, every paid engagement and every liker's qualifying payment settled on chain (else
 * EpochNotReadyError: the scores could still change).
 */
async function scoreEpoch(deps: CreatorFundDeps, epoch: EpochWindow): Promise<AuthorScore[]> {
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
  return scoreAuthors(likesFromPayingEngagers(engagement, liking.paying));
}

/** Where payouts go: each payable author's wallet, and the wallets a payout must open a native token account for. */
interface Recipients {
  wallets: Map<string, string>;
  unopened: Set<string>;
}

async function payableAuthors(
  deps: CreatorFundDeps,
  platform: PlatformChain,
  scores: AuthorScore[],
): Promise<{ payable: AuthorScore[]; recipients: Recipients }> {
  const wallets = await walletAddresses(
    deps.db,
    scores.map((s) => s.authorId),
  );
  // An author without a custodial wallet cannot receive tokens (none exist today): left out.
  const payable = scores.filter((s) => wallets.has(s.authorId));
  // Wallets never paid native tokens have no native token account: their batches create it.
  const unopened = await ownersWithoutNativeAccount(
    deps.rpc,
    platform,
    payable.map((s) => wallets.get(s.authorId)!),
  );
  return { payable, recipients: { wallets, unopened } };
}

function needsAccount(recipients: Recipients, authorId: string): boolean {
  return recipients.unopened.has(recipients.wallets.get(authorId)!);
}

/** The fund's balance on chain, and what batches planned but not executed yet will take from it (native base units). */
interface FundBalance {
  onChain: bigint;
  inFlight: bigint;
}

/** Read in the planning transaction, under its lock: no other planner adds batches meanwhile. */
async function fundBalance(deps: CreatorFundDeps, tx: Tx, platform: PlatformChain): Promise<FundBalance> {
  const inFlight = await inFlightPayoutTotal(tx);
  const onChain = await fundChainBalance(deps.rpc, platform);
  return { onChain, inFlight };
}

/**
 * What the epoch pays and to whom. What the fund can pay is its balance on chain less the batches
 * planned but not yet executed (they will take their tokens when they land). `sent` ones may
 * already show in the balance: subtracting them too under-pays while they are in flight, never
 * over-spends.
 */
function splitEpochBudget(budget: bigint, fund: FundBalance, payable: readonly AuthorScore[]) {
  const available = maxBig(0n, fund.onChain - fund.inFlight);
  const payTotal = available < budget ? available : budget;
  const shares = splitBudget(payTotal, payable);
  const outcome: EpochOutcome =
    payable.length === 0 ? 'no_engagement' : shares.length === 0 ? 'unfunded' : 'planned';
  const paidTotal = shares.reduce((acc, s) => acc + s.amount, 0n);
  const note =
    outcome === 'no_engagement'
      ? 'no engagement from other accounts in this epoch'
      : outcome === 'unfunded'
        ? `the creator fund is empty (${formatNative(fund.onChain)} on chain, ${formatNative(fund.inFlight)} in flight): nothing paid`
        : paidTotal < budget
          ? `the creator fund is short: paid ${formatNative(paidTotal)} of the ${formatNative(budget)} budget`
          : '';
  return { outcome, budget, available, paidTotal, authorCount: shares.length, note, shares };
}

/**
 * Authors whose account exists first, 16 a batch; then those whose account each transfer
 * creates, 8 a batch (a create takes ~42 bytes of the 1232).
 */
function cutPayoutBatches(shares: readonly AuthorShare[], recipients: Recipients): AuthorShare[][] {
  return [
    ...cutIntoBatches(
      shares.filter((s) => !needsAccount(recipients, s.authorId)),
      TRANSFERS_PER_BATCH,
    ),
    ...cutIntoBatches(
      shares.filter((s) => needsAccount(recipients, s.authorId)),
      CREATING_TRANSFERS_PER_BATCH,
    ),
  ];
}

/**
 * One payout batch, written in the planning transaction: its transaction signed (not sent), its
 * ledger movement, its outbox row, and its batch and payout rows.
 */
async function planBatch(
  deps: CreatorFundDeps,
  tx: Tx,
  platform: PlatformChain,
  {
    epoch,
    index,
    batch,
    recipients,
  }: { epoch: EpochWindow; index: number; batch: AuthorShare[]; recipients: Recipients },
): Promise<EpochPlan['batches'][number]> {
  const total = batch.reduce((acc, s) => acc + s.amount, 0n);
  const payment = await signPayoutBatch(
    deps.rpc,
    platform,
    batch.map((s) => ({
      owner: new PublicKey(recipients.wallets.get(s.authorId)!),
      amount: s.amount,
      createAccount: needsAccount(recipients, s.authorId),
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
  const { movementId } = await recordMovement(tx, {
    kind: 'fund_payout',
    legs,
    pending: 'hold',
    idempotencyKey: `fund:${epoch.start.toISOString()}:${index}`,
  });
  const chainTransactionId = await insertOutboxPayment(tx, movementId, payment, {
    type: 'fund.payout',
    // amount_micro is micro-USD: a native payout moves no dollars. The tokens are in the payload.
    payload: JSON.stringify({
      epoch_start: epoch.start.toISOString(),
      batch_index: index,
      total_native: total.toString(),
      transfers: batch.length,
    }),
  });
  await insertPayoutBatch(tx, {
    epochStart: epoch.start,
    batchIndex: index,
    movementId,
    chainTransactionId,
    total,
    payouts: batch,
  });
  return {
    index,
    chainTransactionId,
    transfers: batch.length,
    total,
    status: 'signed',
    signature: payment.signature,
  };
}

/** The metrics and log lines of an epoch just planned. */
function reportPlanned(
  deps: CreatorFundDeps,
  epoch: EpochWindow,
  planned: ReturnType<typeof splitEpochBudget> & { batches: EpochPlan['batches'] },
): void {
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
}

/** The recorded plan of an epoch, if any. */
export async function loadPlan(
  deps: Pick<CreatorFundDeps, 'db'>,
  epochStart: Date,
): Promise<EpochPlan | undefined> {
  const row = await epochRow(deps.db, epochStart);
  if (!row) return undefined;
  const batches = await epochBatchRows(deps.db, epochStart);
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
