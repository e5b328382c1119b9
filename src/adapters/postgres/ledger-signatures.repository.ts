import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * The signatures among `signatures` the ledger already accounts for: an outbox transaction (or a
 * signature it replaced when re-signed), or a deposit recorded under `deposit:<signature>`.
 */
export async function signaturesKnownToLedger(db: Db, signatures: readonly string[]): Promise<Set<string>> {
  if (signatures.length === 0) return new Set();
  const { rows } = await sql<{ signature: string }>`
    SELECT signature FROM chain_transactions WHERE signature = ANY(${signatures}::text[])
    UNION
    SELECT replaced FROM chain_transactions, unnest(replaced_signatures) AS replaced
     WHERE replaced_signatures && ${signatures}::text[] AND replaced = ANY(${signatures}::text[])
    UNION
    SELECT substr(idempotency_key, length('deposit:') + 1) FROM ledger_movements
     WHERE idempotency_key = ANY(${signatures.map((s) => `deposit:${s}`)}::text[])`.execute(db);
  return new Set(rows.map((row) => row.signature));
}
