import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  legsOfMovements,
  markReconciled,
  unreconciledAgeSeconds,
  withReconcileRound,
  type ReconcileCandidateRow,
  type ReconcileMark,
} from '../../adapters/postgres/reconciliation.repository.js';
import { closedPeriodWindows, frozenVerdicts } from '../../adapters/postgres/finance-periods.repository.js';
import {
  stageReconciliationExceptions,
  type ReconciliationException,
} from '../../adapters/postgres/reconciliation-events.repository.js';
import { ChainError, type PlatformChain, type RpcClient } from '../../adapters/solana/index.js';
import type { Metrics } from '../../observability/metrics.js';
import {
  addDelta,
  compareDeltas,
  isException,
  type ReconciliationStatus,
} from '../../domain/reconciliation/reconciliation.js';
import { followedTransactions } from '../../adapters/postgres/block-follower.repository.js';
import { finalizedBlockhashes } from './block-reader.js';
import { clickhouseTime } from './event-shipper.js';
import {
  fetchTransactions,
  recordTransactions,
  tokenDeltas,
  type FetchedTransaction,
} from './chain-reader.js';

export interface ReconcilerDeps {
  db: Db;
  clickhouse: ClickHouse;
  rpc: RpcClient;
  metrics: Metrics;
  bootstrapChain(): Promise<PlatformChain>;
}

export interface ReconcileOptions {
  /** An outbox transaction not found on chain this long after it was signed is `missing`. */
  missingAfterMs: number;
  /** Rows per round. */
  limit?: number;
  /** Re-check rows already reconciled, created at or after this time (`reconcile --since`). */
  since?: Date;
  /**
   * With `since`: only rows created before this time, and only rows after this keyset cursor (the
   * `last` of the previous round). `since` alone re-selects the same first rows every round; a
   * caller walking a range passes each round's `last` back to move on.
   */
  until?: Date;
  after?: ReconcileCursor;
  /** Wait this long after the confirmed check before the finalized one. @defaultValue 15_000 */
  finalizedRecheckMs?: number;
  /**
   * While the block follower's cursor moved within this many ms, a row not checked yet whose slot
   * the follower has not read waits for it rather than being fetched (ReconcileClaim). The indexer
   * role passes FOLLOWER_FRESH_MS; undefined fetches every row as it comes (the CLI, tests).
   */
  followerFreshMs?: number;
  /**
   * A row the payments worker is still settling (`signed`, `sent`) is checked only once it is this
   * old: before, its transaction is usually not confirmed yet (a wasted fetch and a `pending`
   * verdict), and the round's row lock would make the worker's own update wait for the round.
   * @defaultValue 5_000
   */
  settlingGraceMs?: number;
}

export interface ReconcileRound {
  checked: number;
  byStatus: Partial<Record<ReconciliationStatus, number>>;
  /** The round's last row in (created_at, id) order; undefined when it checked nothing. */
  last?: ReconcileCursor;
}

/**
 * A position in (created_at, id) order. `createdAt` is Postgres's own text of the timestamp: a JS
 * Date keeps milliseconds only, and a cursor rounded down would select its own rows again.
 */
export interface ReconcileCursor {
  createdAt: string;
  id: string;
}

/**
 * The transactions among `signatures` the block follower saw in a confirmed block
 * (followed_transactions), as the reconciler would have fetched them at `commitment`: at confirmed
 * as seen; at finalized only those whose block is the finalized one at its slot (one getBlock per
 * slot, however many payments it holds, against a getTransaction per payment). `notYet`: those seen
 * in a block past the finalized slot, which cannot be finalized yet (a getTransaction at finalized
 * would find nothing): looked at again on their next recheck. The others are left to
 * getTransaction: a payment the follower has not reached, or whose block it cannot vouch for.
 */
async function seenInBlocks(
  deps: ReconcilerDeps,
  db: Parameters<typeof followedTransactions>[0],
  signatures: readonly string[],
  commitment: 'confirmed' | 'finalized',
): Promise<{ found: Map<string, FetchedTransaction>; notYet: Set<string> }> {
  const seen = await followedTransactions(db, signatures);
  if (commitment === 'confirmed' || seen.size === 0) {
    return { found: new Map([...seen].map(([signature, { tx }]) => [signature, tx])), notYet: new Set() };
  }
  const finalizedSlot = await deps.rpc.call<number>('getSlot', [{ commitment: 'finalized' }]);
  const due = [...seen.values()].filter(({ tx }) => tx.slot <= finalizedSlot);
  const notYet = new Set(
    [...seen.values()].filter(({ tx }) => tx.slot > finalizedSlot).map(({ tx }) => tx.signature),
  );
  const hashes = await finalizedBlockhashes(deps.rpc, [...new Set(due.map(({ tx }) => tx.slot))]);
  const found = new Map(
    due.filter(({ tx, blockhash }) => hashes.get(tx.slot) === blockhash).map(({ tx }) => [tx.signature, tx]),
  );
  return { found, notYet };
}

/** A transaction is finalized ~32 slots (~13 s) after it lands; re-checking before is wasted RPC. */
const FINALIZED_RECHECK_MS = 15_000;
/** The worker confirms a payment within a second of sending it; past this, the indexer looks itself. */
const SETTLING_GRACE_MS = 5_000;
/**
 * The block follower moves its cursor every round (a second) while the chain makes blocks: a cursor
 * this old means no follower is following, and the reconciler fetches what it would have waited for.
 */
export const FOLLOWER_FRESH_MS = 10_000;

/**
 * The verdicts finance is told of (`reconciliation.exception`): every exception but `pending`,
 * which only says the chain has not shown the transaction yet and becomes a verdict later.
 */
const toldToFinance = (status: ReconciliationStatus): boolean => isException(status) && status !== 'pending';

/**
 * One round of reconciliation: takes outbox transactions that need a verdict (never checked;
 * checked at confirmed and old enough to be finalized; or, with `since`, everything from then),
 * fetches them from chain (batched getTransaction), derives the USDC movements from pre/post token
 * balances, compares them with the ledger legs and records the verdict in ClickHouse (with the
 * transaction and its movements) and on the outbox row; an exception is staged as an event for
 * finance in the same Postgres transaction. Rows are claimed FOR UPDATE SKIP LOCKED
 * inside one transaction, so two indexers never check the same row at once, and the row's
 * `reconciled_commitment` makes a restart resume where it stopped.
 */
export async function reconcileRound(
  deps: ReconcilerDeps,
  options: ReconcileOptions,
): Promise<ReconcileRound> {
  const limit = options.limit ?? 500;
  const platform = await deps.bootstrapChain();
  const claim = {
    limit,
    since: options.since,
    until: options.until,
    after: options.after,
    finalizedRecheckMs: options.finalizedRecheckMs ?? FINALIZED_RECHECK_MS,
    settlingGraceMs: options.settlingGraceMs ?? SETTLING_GRACE_MS,
    followerFreshMs: options.followerFreshMs,
  };
  return withReconcileRound(deps.db, claim, async (rows, trx) => {
    if (rows.length === 0) return { checked: 0, byStatus: {} };

    // Each row is fetched at the next commitment it needs: confirmed first, finalized after.
    const wanted = (row: ReconcileCandidateRow) =>
      row.reconciled_commitment === 'confirmed' ? 'finalized' : 'confirmed';
    const fetched = new Map<string, FetchedTransaction | null>();
    for (const commitment of ['confirmed', 'finalized'] as const) {
      const signatures = rows.filter((row) => wanted(row) === commitment).map((row) => row.signature);
      try {
        // What the block follower saw first (no getTransaction each), the rest fetched.
        const { found, notYet } = await seenInBlocks(deps, trx, signatures, commitment);
        for (const [signature, tx] of found) fetched.set(signature, tx);
        const unseen = signatures.filter((signature) => !found.has(signature) && !notYet.has(signature));
        for (const [signature, tx] of await fetchTransactions(deps.rpc, unseen, commitment)) {
          fetched.set(signature, tx);
        }
      } catch (error) {
        if (error instanceof ChainError) deps.metrics.rpcErrors.inc({ kind: error.kind });
        throw error;
      }
    }
    const legs = await ledgerDeltas(
      trx,
      platform,
      rows.map((row) => row.movement_id),
    );

    const byStatus: Partial<Record<ReconciliationStatus, number>> = {};
    const verdicts: Array<Record<string, unknown>> = [];
    const landed: FetchedTransaction[] = [];
    const now = new Date();
    const marks: ReconcileMark[] = [];
    const exceptions: ReconciliationException[] = [];
    const frozen = await frozenVerdictsOf(trx, rows);
    for (const row of rows) {
      const tx = fetched.get(row.signature) ?? null;
      const ledger = legs.get(row.movement_id) ?? new Map<string, bigint>();
      let status: ReconciliationStatus;
      let chainAmount = 0n;
      let ledgerAmount = usdAmount(ledger);
      let detail: string;
      let commitment: 'confirmed' | 'finalized' | null;
      if (!tx) {
        const age = now.getTime() - row.created_at.getTime();
        status = age >= options.missingAfterMs ? 'missing' : 'pending';
        detail = status === 'missing' ? `not found on chain ${Math.round(age / 1000)} s after signing` : '';
        // A row seen confirmed before and not found now (a finalized look on a fork): keep its
        // commitment, so it is looked at again.
        commitment = row.reconciled_commitment === 'confirmed' && status === 'pending' ? 'confirmed' : null;
      } else {
        commitment = wanted(row);
        const chain = chainDeltas(tx, platform);
        chainAmount = usdAmount(chain);
        landed.push(tx);
        if (tx.err !== null) {
          status = 'failed_on_chain';
          // The ledger reversed it (a 'failed' outbox row): nothing moved on either side.
          detail =
            row.status === 'failed'
              ? 'failed on chain; the ledger movement was reversed'
              : `failed on chain but the outbox says ${row.status}`;
          if (row.status === 'failed') ledgerAmount = 0n;
        } else {
          const verdict = compareDeltas(ledger, chain);
          status = verdict.status;
          detail = verdict.detail;
        }
      }
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      deps.metrics.reconciliations.inc({ status, commitment: commitment ?? '' });
      verdicts.push({
        movement_id: row.movement_id,
        signature: row.signature,
        ledger_day: row.movement_created_at.toISOString().slice(0, 10),
        status,
        ledger_amount: ledgerAmount.toString(),
        chain_amount: chainAmount.toString(),
        commitment: commitment ?? '',
        detail,
        checked_at: clickhouseTime(now),
      });
      const closedWith = frozen.get(row.movement_id);
      if (closedWith && status !== closedWith.status && status !== 'pending') {
        // A closed period's files stay as they are: the difference is a verdict of today's (open)
        // period, keyed apart from the original (ledger_day is part of the key).
        const differenceDetail = `${closedWith.period} closed with ${closedWith.status}; now ${status}${detail ? `: ${detail}` : ''}`;
        verdicts.push({
          movement_id: row.movement_id,
          signature: row.signature,
          ledger_day: now.toISOString().slice(0, 10),
          status: 'post_close_difference',
          ledger_amount: ledgerAmount.toString(),
          chain_amount: chainAmount.toString(),
          commitment: commitment ?? '',
          detail: differenceDetail,
          checked_at: clickhouseTime(now),
        });
        exceptions.push({
          signature: row.signature,
          verdict: 'post_close_difference',
          ledgerAmountMicro: ledgerAmount,
          chainAmountMicro: chainAmount,
          detail: differenceDetail,
        });
        byStatus.post_close_difference = (byStatus.post_close_difference ?? 0) + 1;
      }
      marks.push({ id: row.id, commitment, status });
      if (toldToFinance(status)) {
        exceptions.push({
          signature: row.signature,
          verdict: status,
          ledgerAmountMicro: ledgerAmount,
          chainAmountMicro: chainAmount,
          detail,
        });
      }
    }
    await markReconciled(trx, marks, now);
    // Finance's events commit with the marks: a crash before the commit re-checks the rows and
    // stages them again, and the dedupe key keeps one event per signature and verdict.
    await stageReconciliationExceptions(trx, exceptions);
    // ClickHouse first, then the Postgres commit: a crash between re-checks the rows (the
    // ReplacingMergeTrees keep one verdict each), never skips one.
    await recordTransactions(deps.clickhouse, landed);
    await deps.clickhouse.insertRows('reconciliation', verdicts);
    const lastRow = rows[rows.length - 1]!;
    return { checked: rows.length, byStatus, last: { createdAt: lastRow.created_at_key, id: lastRow.id } };
  });
}

/**
 * For the round's rows whose movement lies in a closed finance period: the verdict the period froze
 * (its recorded non-matched verdict, else `matched`) and the period's label.
 */
async function frozenVerdictsOf(
  db: Db,
  rows: readonly ReconcileCandidateRow[],
): Promise<Map<string, { period: string; status: string }>> {
  const windows = await closedPeriodWindows(db);
  const found = new Map<string, { period: string; status: string }>();
  if (windows.length === 0) return found;
  const periodOf = new Map<string, { id: string; period: string }>();
  for (const row of rows) {
    const at = row.movement_created_at.getTime();
    const window = windows.find((w) => w.start.getTime() <= at && at < w.end.getTime());
    if (window) periodOf.set(row.movement_id, window);
  }
  if (periodOf.size === 0) return found;
  const recorded = await frozenVerdicts(
    db,
    [...new Set([...periodOf.values()].map((w) => w.id))],
    [...periodOf.keys()],
  );
  for (const [movementId, window] of periodOf) {
    found.set(movementId, { period: window.period, status: recorded.get(movementId) ?? 'matched' });
  }
  return found;
}

/** Seconds since the oldest outbox transaction not yet reconciled at confirmed was signed. */
export function reconciliationLag(db: Db): Promise<number> {
  return unreconciledAgeSeconds(db);
}

/**
 * Both currencies are compared in one map: a USDC change is keyed by the owner's address, a native
 * one by `native:<address>`, so a swap (native in, USDC out) matches only when both sides match,
 * and a native leg can never offset a USDC one.
 */
const NATIVE_KEY = 'native:';
const deltaKey = (currency: string, owner: string) =>
  currency === 'native' ? `${NATIVE_KEY}${owner}` : owner;

/** What the chain moved: the USDC mint's deltas per owner, and the native mint's under their keys. */
function chainDeltas(tx: FetchedTransaction, platform: PlatformChain): Map<string, bigint> {
  const deltas = tokenDeltas(tx, platform.usdcMint.toBase58());
  for (const [owner, amount] of tokenDeltas(tx, platform.nativeMint.toBase58())) {
    addDelta(deltas, deltaKey('native', owner), amount);
  }
  return deltas;
}

/**
 * The money a verdict records (ClickHouse `reconciliation` amounts are micro-USD, summed by finance
 * per day): the USDC credits only. A native-only movement (a fund payout) records 0 on both sides;
 * its tokens are still compared, and a mismatch still shows in the status and the detail.
 */
function usdAmount(deltas: ReadonlyMap<string, bigint>): bigint {
  let sum = 0n;
  for (const [key, amount] of deltas) if (amount > 0n && !key.startsWith(NATIVE_KEY)) sum += amount;
  return sum;
}

/**
 * The ledger's expected change per wallet owner and currency for each movement (its legs and, when
 * it was reversed, the reversal's too: a reversed movement expects nothing to have moved).
 */
async function ledgerDeltas(
  db: Db,
  platform: PlatformChain,
  movementIds: readonly string[],
): Promise<Map<string, Map<string, bigint>>> {
  const rows = await legsOfMovements(db, movementIds);
  const platformOwners: Record<string, string> = {
    treasury: platform.signers.treasury.publicKey.toBase58(),
    creator_fund: platform.signers.creator_fund.publicKey.toBase58(),
    swap_pool: platform.signers.pool_authority.publicKey.toBase58(),
  };
  const byMovement = new Map<string, Map<string, bigint>>();
  for (const row of rows) {
    const owner = row.kind === 'user' ? row.wallet_address : platformOwners[row.kind];
    if (!owner) continue; // external (deposits), fee pool: no wallet of ours on this side
    let deltas = byMovement.get(row.movement_id);
    if (!deltas) byMovement.set(row.movement_id, (deltas = new Map<string, bigint>()));
    addDelta(deltas, deltaKey(row.currency, owner), row.amount);
  }
  return byMovement;
}
