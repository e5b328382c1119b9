import { sql } from 'kysely';
import type { Db } from './db.js';
import { releaseHeldCreditsSql } from './ledger.repository.js';

/**
 * A payment confirmed on chain: its outbox row leaves 'signed'/'sent' and its movement's held
 * credits become spendable. One statement, so atomic without a transaction and one round trip;
 * the credits move only if this call moved the row (a second worker, or a retry, moves nothing).
 */
export async function confirmOutboxPayment(
  db: Db,
  row: { id: string; signature: string; slot: number },
): Promise<void> {
  await sql`
    WITH moved AS (
      UPDATE chain_transactions
         SET status = 'confirmed', slot = ${BigInt(row.slot)}, updated_at = now()
       WHERE id = ${row.id} AND status IN ('signed', 'sent') AND signature = ${row.signature}
      RETURNING movement_id)
    ${releaseHeldCreditsSql(sql`SELECT movement_id FROM moved`)}`.execute(db);
}
