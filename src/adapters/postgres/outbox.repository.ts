import { sql, type Selectable } from 'kysely';
import type { ChainTransactionsTable } from './database.js';
import type { Db } from './db.js';
import { releaseHeldCreditsSql } from './ledger.repository.js';

export interface OutboxLanding {
  id: string;
  /** The signature that landed: a row re-signed meanwhile (another signature) is left alone. */
  signature: string;
  slot: number;
}

const landings = (rows: readonly OutboxLanding[]) =>
  sql.join(rows.map((r) => sql`(${r.id}::uuid, ${r.signature}::text, ${BigInt(r.slot)}::bigint)`));

/**
 * Payments the cluster executed (commitment processed): their outbox rows go 'signed' → 'sent'.
 * One statement for any number of rows: a worker settling hundreds of payments sees them execute
 * in the same poll, and one round trip each was most of its Postgres traffic.
 */
export async function markOutboxSent(db: Db, rows: readonly OutboxLanding[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    UPDATE chain_transactions c
       SET status = 'sent', slot = l.slot, updated_at = now()
      FROM (VALUES ${landings(rows)}) AS l (id, signature, slot)
     WHERE c.id = l.id AND c.status = 'signed' AND c.signature = l.signature`.execute(db);
}

/**
 * Payments confirmed on chain: their outbox rows leave 'signed'/'sent' and their movements' held
 * credits become spendable. One statement, so atomic without a transaction and one round trip for
 * any number of rows; credits move only for the rows this call moved (a second worker, or a retry,
 * moves nothing).
 */
export async function confirmOutboxPayments(db: Db, rows: readonly OutboxLanding[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    WITH moved AS (
      UPDATE chain_transactions c
         SET status = 'confirmed', slot = l.slot, updated_at = now()
        FROM (VALUES ${landings(rows)}) AS l (id, signature, slot)
       WHERE c.id = l.id AND c.status IN ('signed', 'sent') AND c.signature = l.signature
      RETURNING c.movement_id)
    ${releaseHeldCreditsSql(sql`SELECT movement_id FROM moved`)}`.execute(db);
}

/** Outbox rows by id, in one statement; a missing id has no entry in the map. */
export async function outboxRows(
  db: Db,
  ids: readonly string[],
): Promise<Map<string, Selectable<ChainTransactionsTable>>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('chain_transactions')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [row.id, row]));
}
