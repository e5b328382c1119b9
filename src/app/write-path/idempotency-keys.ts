import type { Db } from '../../adapters/postgres/db.js';
import { deleteExpiredIdempotencyKeys } from '../../adapters/postgres/idempotency-purge.repository.js';
import type {
  IdempotentResourceKind,
  KeyOwner,
  RecordedResource,
} from '../../adapters/postgres/idempotency.repository.js';

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
  return deleteExpiredIdempotencyKeys(db, IDEMPOTENCY_KEY_TTL_HOURS, batch);
}

/**
 * How long an Idempotency-Key's owner is presumed alive past its last sign of life, beyond
 * WRITE_TIMEOUT_MS (the longest a paid write waits for the chain before answering). The owner
 * renews its lease every third of it while it works; a repeat takes the key over only once it ran
 * out: a process killed mid-request holds its keys this long at most.
 */
export const IDEMPOTENCY_LEASE_MARGIN_MS = 5_000;

export function idempotencyLeaseMs(writeTimeoutMs: number): number {
  return writeTimeoutMs + IDEMPOTENCY_LEASE_MARGIN_MS;
}

/**
 * The Idempotency-Key a paid write runs under (REST's header, or a GraphQL paid mutation's key): the account's key
 * and this request's owner token. The write's commit records what it created on the key's row in
 * the same statement, and fails with 409 conflict, committing nothing, if a retry took the key
 * over meanwhile. `resume`: the resource a dead owner's commit recorded, which the write answers
 * with instead of writing again (unless its payment failed on chain and was refunded: then nothing
 * was charged and it writes anew).
 */
export interface IdempotencyClaim extends KeyOwner {
  resume?: RecordedResource | undefined;
}

/** The id of the resource `claim` resumes, if any; a resource of another kind is a bug. */
export function resumedId(
  claim: IdempotencyClaim | undefined,
  kind: IdempotentResourceKind,
): string | undefined {
  const resume = claim?.resume;
  if (!resume) return undefined;
  if (resume.kind !== kind) {
    throw new Error(`Idempotency-Key ${claim.key} recorded a ${resume.kind}, not a ${kind}`);
  }
  return resume.id;
}
