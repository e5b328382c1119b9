import type { Logger } from 'pino';
import type { Db } from '../../adapters/postgres/db.js';
import {
  confirmedDeposits,
  finalizeDeposits,
  flagMissingDeposits,
} from '../../adapters/postgres/deposit-finality.repository.js';
import {
  confirmedOutboxRows,
  finalizeOutboxPayments,
  reopenVanishedPayment,
} from '../../adapters/postgres/outbox.repository.js';
import type { PaymentsQueue } from '../../adapters/redis/payments-queue.js';
import type { RpcClient, SignatureStatus } from '../../adapters/solana/index.js';

/**
 * Confirmed rows younger than this are not looked at yet: finalization is ~32 slots (~13 s) away,
 * and a look right after the confirmation could meet an RPC node that has not seen it yet.
 */
export const FINALITY_MIN_AGE_MS = 2_000;
/** Rows one round looks at: one getSignatureStatuses call of 256 signatures per part of it. */
export const FINALITY_BATCH = 512;

export interface FinalityDeps {
  db: Db;
  rpc: Pick<RpcClient, 'getSignatureStatuses'>;
  payments: Pick<PaymentsQueue, 'resubmit'>;
  logger: Logger;
}

export interface FinalityRound {
  /** Confirmed rows looked at. */
  seen: number;
  finalized: number;
  /** Rows not found on chain in this round for the first time: looked at again next round. */
  missing: number;
  /** Rows not found twice in a row: back to sending. */
  reopened: number;
  /** Deposits (deposit_transactions), followed in the same round; not counted above. */
  deposits: { seen: number; finalized: number; missing: number };
}

/**
 * The finality follower: confirmed is not final. Each round asks the chain, for the oldest
 * confirmed outbox rows, how far each has got (searching the whole history): a finalized one is
 * marked `finalized`; one the chain no longer knows (a dropped fork; a localnet that lost its last
 * second in a crash) goes back to sending (reopenVanishedPayment: status `signed`, its credits to
 * users held again) and is handed to the payments queue, which sends the same bytes while the
 * blockhash lives and re-signs after, until ledger = chain again.
 *
 * "Not found" must hold in two rounds in a row: one look can meet an RPC node behind the rest of
 * its cluster. `missingBefore` carries the ids missing in the previous round.
 *
 * Deposits (credited once seen confirmed; no outbox row) are followed in the same round and the
 * same call: a finalized one is marked `finalized`. One the chain lost cannot be sent again (its
 * sender signed it, not us): it is flagged (`missing_since`) and logged once, and stays confirmed,
 * looked at again every round.
 */
export async function followFinality(
  deps: FinalityDeps,
  missingBefore: ReadonlySet<string>,
  options: { minAgeMs?: number; batch?: number } = {},
): Promise<FinalityRound & { missingNow: Set<string> }> {
  const window = {
    confirmedBeforeMs: options.minAgeMs ?? FINALITY_MIN_AGE_MS,
    limit: options.batch ?? FINALITY_BATCH,
  };
  const [rows, deposits] = await Promise.all([
    confirmedOutboxRows(deps.db, window),
    confirmedDeposits(deps.db, window),
  ]);
  const missingNow = new Set<string>();
  const none = { seen: 0, finalized: 0, missing: 0 };
  if (rows.length === 0 && deposits.length === 0)
    return { seen: 0, finalized: 0, missing: 0, reopened: 0, deposits: none, missingNow };
  const statuses = await deps.rpc.getSignatureStatuses(
    [...rows.map((row) => row.signature), ...deposits.map((deposit) => deposit.signature)],
    { searchTransactionHistory: true },
  );
  const depositRound = await followDeposits(deps, deposits, statuses.slice(rows.length), missingBefore);
  depositRound.missingNow.forEach((key) => missingNow.add(key));
  const finalized = [];
  const vanished = [];
  for (const [index, row] of rows.entries()) {
    const status = statuses[index];
    if (status === null || status === undefined) {
      if (missingBefore.has(row.id)) vanished.push(row);
      else missingNow.add(row.id);
    } else if (status.confirmationStatus === 'finalized' && status.err === null) {
      finalized.push({ id: row.id, signature: row.signature, slot: status.slot });
    }
  }
  await finalizeOutboxPayments(deps.db, finalized);
  let reopened = 0;
  for (const row of vanished) {
    const outcome = await reopenVanishedPayment(deps.db, row);
    if (!outcome.reopened) continue;
    reopened += 1;
    deps.logger.warn(
      { chainTransactionId: row.id, swapTx: row.signature, creditsHeld: outcome.creditsHeld },
      outcome.creditsHeld
        ? 'a confirmed payment is no longer on chain: sending it again, its credits held until it confirms'
        : 'a confirmed payment is no longer on chain: sending it again; a recipient already spent its credits, which stay spendable',
    );
    await deps.payments.resubmit(row.id);
  }
  return {
    seen: rows.length,
    finalized: finalized.length,
    missing: missingNow.size - depositRound.missingNow.size,
    reopened,
    deposits: { seen: deposits.length, finalized: depositRound.finalized, missing: depositRound.missing },
    missingNow,
  };
}

/** Deposits' keys in `missingBefore` / `missingNow`, apart from the outbox rows' ids. */
const missingKey = (movementId: string) => `deposit:${movementId}`;

/** The deposits' part of a round, from their statuses (same order as `deposits`). */
async function followDeposits(
  deps: FinalityDeps,
  deposits: ReadonlyArray<{ movementId: string; signature: string; missing: boolean }>,
  statuses: ReadonlyArray<SignatureStatus | null>,
  missingBefore: ReadonlySet<string>,
): Promise<{ finalized: number; missing: number; missingNow: Set<string> }> {
  const missingNow = new Set<string>();
  const finalized: Array<{ movementId: string; slot: number }> = [];
  const missing: string[] = [];
  const foundAgain: string[] = [];
  for (const [index, deposit] of deposits.entries()) {
    const status = statuses[index];
    if (status === null || status === undefined) {
      missingNow.add(missingKey(deposit.movementId));
      if (missingBefore.has(missingKey(deposit.movementId))) missing.push(deposit.movementId);
      continue;
    }
    if (deposit.missing) foundAgain.push(deposit.movementId);
    // A deposit was credited from a transaction that succeeded: one finalized is final.
    if (status.confirmationStatus === 'finalized' && status.err === null) {
      finalized.push({ movementId: deposit.movementId, slot: status.slot });
    }
  }
  await finalizeDeposits(deps.db, finalized);
  const flagged = await flagMissingDeposits(deps.db, { missing, foundAgain });
  for (const movementId of flagged) {
    const { signature } = deposits.find((deposit) => deposit.movementId === movementId)!;
    deps.logger.warn(
      { movementId, signature },
      'a credited deposit is no longer on chain (a dropped fork?): it stays credited and confirmed, looked at again every round',
    );
  }
  return { finalized: finalized.length, missing: missing.length, missingNow };
}
