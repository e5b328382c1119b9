import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * Deletes up to `batch` Idempotency-Key records older than `ttlHours` (index
 * idempotency_keys_by_age) and returns how many went. SKIP LOCKED lets several workers purge at
 * once without waiting on each other or on a request that is reusing an expired key right now.
 */
export async function deleteExpiredIdempotencyKeys(db: Db, ttlHours: number, batch: number): Promise<number> {
  const { numAffectedRows } = await sql`
    DELETE FROM idempotency_keys WHERE ctid IN (
      SELECT ctid FROM idempotency_keys
       WHERE created_at < now() - make_interval(hours => ${ttlHours})
       LIMIT ${batch} FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(numAffectedRows ?? 0n);
}
