import { sql, type Selectable, type Transaction } from 'kysely';
import type { ChainTransactionsTable, Database } from './database.js';
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

/** A payment signed again under a fresh blockhash (the old one expired unseen). */
export interface ResignedPayment {
  signature: string;
  wire: Buffer;
  blockhash: string;
  lastValidBlockHeight: number;
}

/**
 * Records a re-signed payment: back to 'signed' with the fresh signature, the old one kept in
 * `replaced_signatures` (the indexer proves it never landed). Guarded by the old signature: two
 * workers racing re-sign once.
 */
export async function recordOutboxResigned(
  db: Db,
  rowId: string,
  oldSignature: string,
  fresh: ResignedPayment,
): Promise<void> {
  await db
    .updateTable('chain_transactions')
    .set((eb) => ({
      status: 'signed',
      signature: fresh.signature,
      wire: fresh.wire,
      blockhash: fresh.blockhash,
      last_valid_block_height: BigInt(fresh.lastValidBlockHeight),
      attempts: eb('attempts', '+', 1),
      replaced_signatures: eb.fn('array_append', ['replaced_signatures', eb.val(oldSignature)]),
      updated_at: new Date(),
    }))
    .where('id', '=', rowId)
    .where('signature', '=', oldSignature)
    .execute();
}

/**
 * Marks a payment failed on chain, inside the transaction that reverses its movement; false when
 * it was no longer in flight (another worker settled it), and then nothing is to be reversed.
 */
export async function markOutboxFailed(
  trx: Db | Transaction<Database>,
  rowId: string,
  failure: Record<string, unknown>,
): Promise<boolean> {
  const marked = await trx
    .updateTable('chain_transactions')
    .set({ status: 'failed', error: JSON.stringify(failure), updated_at: new Date() })
    .where('id', '=', rowId)
    .where('status', 'in', ['signed', 'sent'])
    .executeTakeFirst();
  return marked.numUpdatedRows > 0n;
}
