import type { Logger } from 'pino';
import type { Db } from '../../adapters/postgres/db.js';
import {
  confirmedOutboxRows,
  finalizeOutboxPayments,
  reopenVanishedPayment,
} from '../../adapters/postgres/outbox.repository.js';
import type { PaymentsQueue } from '../../adapters/redis/payments-queue.js';
import type { RpcClient } from '../../adapters/solana/index.js';

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
 */
export async function followFinality(
  deps: FinalityDeps,
  missingBefore: ReadonlySet<string>,
  options: { minAgeMs?: number; batch?: number } = {},
): Promise<FinalityRound & { missingNow: Set<string> }> {
  const rows = await confirmedOutboxRows(deps.db, {
    confirmedBeforeMs: options.minAgeMs ?? FINALITY_MIN_AGE_MS,
    limit: options.batch ?? FINALITY_BATCH,
  });
  const missingNow = new Set<string>();
  if (rows.length === 0) return { seen: 0, finalized: 0, missing: 0, reopened: 0, missingNow };
  const statuses = await deps.rpc.getSignatureStatuses(
    rows.map((row) => row.signature),
    { searchTransactionHistory: true },
  );
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
  return { seen: rows.length, finalized: finalized.length, missing: missingNow.size, reopened, missingNow };
}
