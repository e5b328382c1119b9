import { sql } from 'kysely';
import type { Db } from './db.js';

/** A deposit's chain transaction as the finality follower sees it (deposit_transactions). */
export interface DepositWatch {
  movementId: string;
  signature: string;
  /** The chain did not know it in two looks in a row, last time it was checked. */
  missing: boolean;
}

/**
 * Deposits credited (confirmed) and not yet finalized, oldest credit first
 * (deposit_transactions_confirmed). Younger than `confirmedBeforeMs` are left for a later round.
 */
export async function confirmedDeposits(
  db: Db,
  options: { confirmedBeforeMs: number; limit: number },
): Promise<DepositWatch[]> {
  const rows = await db
    .selectFrom('deposit_transactions')
    .select(['movement_id', 'signature', 'missing_since'])
    .where('status', '=', 'confirmed')
    .where('confirmed_at', '<', sql<Date>`now() - make_interval(secs => ${options.confirmedBeforeMs / 1000})`)
    .orderBy('confirmed_at')
    .limit(options.limit)
    .execute();
  return rows.map((row) => ({
    movementId: row.movement_id,
    signature: row.signature,
    missing: row.missing_since !== null,
  }));
}

/** Deposits the chain now reports finalized: `finalized`, with the slot it reported. Once. */
export async function finalizeDeposits(
  db: Db,
  rows: ReadonlyArray<{ movementId: string; slot: number }>,
): Promise<void> {
  if (rows.length === 0) return;
  const values = sql.join(rows.map((r) => sql`(${r.movementId}::uuid, ${BigInt(r.slot)}::bigint)`));
  await sql`
    UPDATE deposit_transactions d
       SET status = 'finalized', slot = f.slot, finalized_at = now(), missing_since = NULL
      FROM (VALUES ${values}) AS f (movement_id, slot)
     WHERE d.movement_id = f.movement_id AND d.status = 'confirmed'`.execute(db);
}

/**
 * Sets or clears `missing_since`: set on deposits the chain did not know in two looks in a row
 * (returns the ones that were not flagged before, to be told once), cleared on those it knows
 * again.
 */
export async function flagMissingDeposits(
  db: Db,
  change: { missing: readonly string[]; foundAgain: readonly string[] },
): Promise<string[]> {
  if (change.foundAgain.length > 0) {
    await db
      .updateTable('deposit_transactions')
      .set({ missing_since: null })
      .where('movement_id', 'in', [...change.foundAgain])
      .execute();
  }
  if (change.missing.length === 0) return [];
  const flagged = await db
    .updateTable('deposit_transactions')
    .set({ missing_since: sql<Date>`now()` })
    .where('movement_id', 'in', [...change.missing])
    .where('status', '=', 'confirmed')
    .where('missing_since', 'is', null)
    .returning('movement_id')
    .execute();
  return flagged.map((row) => row.movement_id);
}
