import { sql, type RawBuilder } from 'kysely';
import type { SwapQuote } from '../../domain/swap/constant-product.js';
import type { Db } from './db.js';

/**
 * The swaps row's INSERT ... RETURNING id, for commitPaidWrite's one statement: `movementId` is
 * the SQL expression of the movement that statement records.
 */
export function insertSwap(
  db: Db,
  swap: { id: string; accountId: string; quote: SwapQuote },
  movementId: RawBuilder<string>,
) {
  return db
    .insertInto('swaps')
    .values({
      id: swap.id,
      account_id: swap.accountId,
      amount_tokens: swap.quote.amountTokens,
      fee_tokens: swap.quote.feeTokens,
      amount_usdc: swap.quote.amountUsdcMicro,
      reserve_native_before: swap.quote.reservesBefore.nativeUnits,
      reserve_usdc_before: swap.quote.reservesBefore.usdcMicro,
      movement_id: movementId,
    })
    .returning('id');
}

/** Swap `swapId` as committed: its amount, the reserves it priced against and its movement. Throws when absent. */
export async function swapById(db: Db, swapId: string) {
  return db
    .selectFrom('swaps')
    .select(['id', 'amount_tokens', 'reserve_native_before', 'reserve_usdc_before', 'movement_id'])
    .where('id', '=', swapId)
    .executeTakeFirstOrThrow();
}

/** The outbox rows of swaps committed but not yet executed by the cluster (status `signed`). */
export async function signedSwapPaymentIds(db: Db): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
      SELECT c.id FROM chain_transactions c JOIN swaps s ON s.movement_id = c.movement_id
       WHERE c.status = 'signed'`.execute(db);
  return rows.map((row) => row.id);
}
