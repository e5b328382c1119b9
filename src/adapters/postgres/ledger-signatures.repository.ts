import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * How the ledger accounts for a signature: `outbox`, a transaction it signed (or a signature it
 * replaced when re-signed), which the reconciler fetches and indexes; `deposit`, a deposit recorded
 * under `deposit:<signature>` (by the faucets or by an earlier follower round), which nothing else
 * indexes.
 */
export type LedgerSignatureSource = 'outbox' | 'deposit';

/** The signatures among `signatures` the ledger already accounts for, and how. */
export async function signaturesKnownToLedger(
  db: Db,
  signatures: readonly string[],
): Promise<Map<string, LedgerSignatureSource>> {
  if (signatures.length === 0) return new Map();
  const { rows } = await sql<{ signature: string; source: LedgerSignatureSource }>`
    SELECT signature, 'outbox' AS source FROM chain_transactions WHERE signature = ANY(${signatures}::text[])
    UNION
    SELECT replaced, 'outbox' FROM chain_transactions, unnest(replaced_signatures) AS replaced
     WHERE replaced_signatures && ${signatures}::text[] AND replaced = ANY(${signatures}::text[])
    UNION
    SELECT substr(idempotency_key, length('deposit:') + 1), 'deposit' FROM ledger_movements
     WHERE idempotency_key = ANY(${signatures.map((s) => `deposit:${s}`)}::text[])`.execute(db);
  const known = new Map<string, LedgerSignatureSource>();
  // An outbox signature is the reconciler's to index, even if a deposit were keyed by it too.
  for (const row of rows) if (known.get(row.signature) !== 'outbox') known.set(row.signature, row.source);
  return known;
}
