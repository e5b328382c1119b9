import { sql } from 'kysely';
import type { Db } from '../../adapters/postgres/db.js';

/** An Idempotency-Key is kept at least this long; an older one may be used again (and is purged). */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;
/** Rows one purge deletes at most: a short statement that never holds many locks at once. */
export const IDEMPOTENCY_PURGE_BATCH = 1_000;

/**
 * Deletes up to `batch` Idempotency-Key records older than the TTL (index idempotency_keys_by_age)
 * and returns how many went. Without it every key ever sent stayed in Postgres: a key was only
 * deleted when the same account reused it. SKIP LOCKED lets several workers purge at once without
 * waiting on each other or on a request that is reusing an expired key right now.
 */
export async function purgeExpiredIdempotencyKeys(db: Db, batch = IDEMPOTENCY_PURGE_BATCH): Promise<number> {
  const { numAffectedRows } = await sql`
    DELETE FROM idempotency_keys WHERE ctid IN (
      SELECT ctid FROM idempotency_keys
       WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
       LIMIT ${batch} FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(numAffectedRows ?? 0n);
}
