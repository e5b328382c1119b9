import { sql, type Selectable, type Transaction } from 'kysely';
import type { ChainTransactionsTable, Database } from './database.js';
import type { Db } from './db.js';
import { holdCreditsAgainSql, releaseHeldCreditsSql } from './ledger.repository.js';

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
 * Payments confirmed on chain: their outbox rows leave 'signed'/'sent' (with `confirmed_at`) and
 * their movements' held credits become spendable. One statement, so atomic without a transaction
 * and one round trip for any number of rows; credits move only for the rows this call moved (a
 * second worker, or a retry, moves nothing) and only while they are held: a payment that vanished
 * after an earlier confirmation and could not hold them again (reopenVanishedPayment) must not
 * release them twice. The rows are locked first so that `credits_held` is read as of the update.
 */
export async function confirmOutboxPayments(db: Db, rows: readonly OutboxLanding[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    WITH landed AS (
      SELECT c.id, c.credits_held, l.slot
        FROM chain_transactions c
        JOIN (VALUES ${landings(rows)}) AS l (id, signature, slot)
          ON c.id = l.id AND c.signature = l.signature
       WHERE c.status IN ('signed', 'sent')
       ORDER BY c.id
         FOR UPDATE OF c),
    moved AS (
      UPDATE chain_transactions c
         SET status = 'confirmed', slot = landed.slot, confirmed_at = now(), credits_held = false,
             updated_at = now()
        FROM landed
       WHERE c.id = landed.id
      RETURNING c.movement_id, landed.credits_held AS was_held)
    ${releaseHeldCreditsSql(sql`SELECT movement_id FROM moved WHERE was_held`)}`.execute(db);
}

/** Confirmed payments the chain now reports finalized: `finalized`, with the slot it reported. */
export async function finalizeOutboxPayments(db: Db, rows: readonly OutboxLanding[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    UPDATE chain_transactions c
       SET status = 'finalized', slot = l.slot, finalized_at = now(), updated_at = now()
      FROM (VALUES ${landings(rows)}) AS l (id, signature, slot)
     WHERE c.id = l.id AND c.status = 'confirmed' AND c.signature = l.signature`.execute(db);
}

/** Confirmed, not yet finalized outbox rows, oldest confirmation first (chain_transactions_confirmed). */
export async function confirmedOutboxRows(
  db: Db,
  options: { confirmedBeforeMs: number; limit: number },
): Promise<Array<{ id: string; signature: string }>> {
  return db
    .selectFrom('chain_transactions')
    .select(['id', 'signature'])
    .where('status', '=', 'confirmed')
    .where('confirmed_at', '<', sql<Date>`now() - make_interval(secs => ${options.confirmedBeforeMs / 1000})`)
    .orderBy('confirmed_at')
    .limit(options.limit)
    .execute();
}

/**
 * A payment seen confirmed that the chain no longer knows goes back to 'signed', to be sent again
 * (the same bytes while its blockhash lives, re-signed after). Its credits to users are held
 * again, so nobody spends what is not on chain, unless a recipient already spent them: then they
 * stay spendable (a balance cannot go negative) and `credits_held` stays false, so the next
 * confirmation does not release them twice. Returns false when the row was no longer confirmed
 * under this signature (finalized or reopened meanwhile), and then nothing changed.
 */
export async function reopenVanishedPayment(
  db: Db,
  row: { id: string; signature: string },
): Promise<{ reopened: boolean; creditsHeld: boolean }> {
  return db.transaction().execute(async (trx) => {
    const reopened = await trx
      .updateTable('chain_transactions')
      .set({ status: 'signed', confirmed_at: null, slot: null, updated_at: new Date() })
      .where('id', '=', row.id)
      .where('status', '=', 'confirmed')
      .where('signature', '=', row.signature)
      .returning('movement_id')
      .executeTakeFirst();
    if (!reopened) return { reopened: false, creditsHeld: false };
    await sql`SAVEPOINT hold_again`.execute(trx);
    try {
      await holdCreditsAgainSql(sql`${reopened.movement_id}::uuid`).execute(trx);
    } catch (error) {
      if ((error as { code?: string }).code !== CHECK_VIOLATION) throw error;
      await sql`ROLLBACK TO SAVEPOINT hold_again`.execute(trx);
      return { reopened: true, creditsHeld: false };
    }
    await trx
      .updateTable('chain_transactions')
      .set({ credits_held: true })
      .where('id', '=', row.id)
      .execute();
    return { reopened: true, creditsHeld: true };
  });
}

/** SQLSTATE of a CHECK constraint (ledger_accounts: balance >= 0). */
const CHECK_VIOLATION = '23514';

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
 * Marks a payment failed on chain, inside the transaction that reverses its movement: undefined
 * when it was no longer in flight (another worker settled it), and then nothing is to be reversed;
 * otherwise whether its credits to users were still held (they are, but for a payment that
 * vanished after a confirmation and whose recipient had spent them: see reopenVanishedPayment).
 */
export async function markOutboxFailed(
  trx: Db | Transaction<Database>,
  rowId: string,
  failure: Record<string, unknown>,
): Promise<{ creditsHeld: boolean } | undefined> {
  const marked = await sql<{ credits_held: boolean }>`
    WITH failing AS (
      SELECT id, credits_held FROM chain_transactions
       WHERE id = ${rowId}::uuid AND status IN ('signed', 'sent')
         FOR UPDATE)
    UPDATE chain_transactions c
       SET status = 'failed', error = ${JSON.stringify(failure)}::jsonb, credits_held = false,
           updated_at = now()
      FROM failing
     WHERE c.id = failing.id
    RETURNING failing.credits_held`.execute(trx);
  const row = marked.rows[0];
  return row && { creditsHeld: row.credits_held };
}
