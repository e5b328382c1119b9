import { reconcileRound, type ReconcilerDeps } from '../../src/app/indexer/reconciler.js';

/**
 * Reconciliation rounds until one takes nothing (at most `maxRounds`). One round is not enough
 * when a worker runs beside the test: a round skips the rows another transaction holds (FOR
 * UPDATE SKIP LOCKED), and the worker's finality follower updates the same outbox rows; the row
 * skipped is the next round's. `finalizedRecheckMs` holds back the finalized look of rows already
 * checked at confirmed: pass a long one before the chain has finalized them, 0 after.
 */
export async function reconcileUntilQuiet(
  deps: ReconcilerDeps,
  options: { finalizedRecheckMs: number; missingAfterMs?: number },
  maxRounds = 10,
): Promise<void> {
  for (let round = 0; round < maxRounds; round++) {
    const { checked } = await reconcileRound(deps, {
      missingAfterMs: options.missingAfterMs ?? 600_000,
      finalizedRecheckMs: options.finalizedRecheckMs,
      limit: 1_000,
    });
    if (checked === 0) return;
  }
}
