import { sql, type RawBuilder } from 'kysely';
import { AppError } from '../../domain/errors.js';
import type { Db } from './db.js';

/** The kinds of resource a keyed paid write creates (idempotency_keys.resource_kind). */
export type IdempotentResourceKind = 'post' | 'repost' | 'send' | 'swap';

/** Whom an Idempotency-Key row belongs to: an account's key and the request's owner token. */
export interface KeyOwner {
  accountId: string;
  key: string;
  owner: string;
}

/** A resource a paid write records on its key's row as it commits. */
export interface RecordedResource {
  kind: IdempotentResourceKind;
  id: string;
}

/** A key's row as a repeat sees it; `expired`: the owner's lease ran out (Postgres' clock). */
export interface KeyState {
  requestHash: string;
  responseStatus: number | null;
  responseBody: string | null;
  owner: string;
  expired: boolean;
}

/** SQLSTATE of idempotency_record_resource: the row is no longer this request's (migration g). */
const TAKEN_OVER = 'LF409';

/** `now() + ms` in Postgres: every lease is set and compared on the database's clock. */
const leaseEnd = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`;

/**
 * The call that records a paid write's resource on its key's row, for the statement that commits
 * the money move (commitPaidWrite, insertOutboxPayment): it raises LF409 when `owner` no longer
 * owns the row, and the whole statement rolls back (see takenOverRefusal).
 */
export function recordResourceCall(owner: KeyOwner, resource: RecordedResource): RawBuilder<string> {
  return sql<string>`idempotency_record_resource(${owner.accountId}::uuid, ${owner.key}, ${owner.owner}::uuid, ${resource.kind}, ${resource.id}::uuid)`;
}

/** The 409 of a write whose key a retry took over (nothing of it committed), or undefined. */
export function takenOverRefusal(error: unknown): AppError | undefined {
  if ((error as { code?: string }).code !== TAKEN_OVER) return undefined;
  return new AppError(
    'conflict',
    'A retry with this Idempotency-Key took the request over; nothing of this one was committed',
  );
}

/**
 * Makes the key this request's if no live row holds it: a row older than the key's TTL makes room
 * first. True when the row inserted is ours (owner token, lease from now).
 */
export async function claimKey(
  db: Db,
  owner: KeyOwner,
  requestHash: string,
  options: { leaseMs: number; ttlHours: number },
): Promise<boolean> {
  await db
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', owner.accountId)
    .where('key', '=', owner.key)
    .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${options.ttlHours})`)
    .execute();
  const inserted = await db
    .insertInto('idempotency_keys')
    .values({
      account_id: owner.accountId,
      key: owner.key,
      request_hash: requestHash,
      owner: owner.owner,
      lease_until: leaseEnd(options.leaseMs),
    })
    .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function readKey(db: Db, accountId: string, key: string): Promise<KeyState | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select([
      'request_hash',
      'response_status',
      'response_body',
      'owner',
      sql<boolean>`lease_until < now()`.as('expired'),
    ])
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .executeTakeFirst();
  return (
    row && {
      requestHash: row.request_hash,
      responseStatus: row.response_status,
      responseBody: row.response_body,
      owner: row.owner,
      expired: row.expired,
    }
  );
}

/**
 * Takes an unanswered row whose lease ran out from `previousOwner` (one statement: of several
 * repeats one wins; a commit by the previous owner either came first, and its resource is
 * returned, or fails for good with LF409). Undefined when the row changed meanwhile (answered,
 * renewed, taken by another repeat). `resource` is what the previous owner's commit recorded:
 * none means nothing was charged.
 */
export async function takeOverKey(
  db: Db,
  next: KeyOwner,
  previousOwner: string,
  leaseMs: number,
): Promise<{ resource: RecordedResource | undefined } | undefined> {
  const row = await db
    .updateTable('idempotency_keys')
    .set({ owner: next.owner, lease_until: leaseEnd(leaseMs) })
    .where('account_id', '=', next.accountId)
    .where('key', '=', next.key)
    .where('owner', '=', previousOwner)
    .where('response_status', 'is', null)
    .where('lease_until', '<', sql<Date>`now()`)
    .returning(['resource_kind', 'resource_id'])
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    resource:
      row.resource_kind && row.resource_id ? { kind: row.resource_kind, id: row.resource_id } : undefined,
  };
}

/** Extends the owner's lease; false once the row is answered or no longer this owner's. */
export async function renewLease(db: Db, owner: KeyOwner, leaseMs: number): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('idempotency_keys')
    .set({ lease_until: leaseEnd(leaseMs) })
    .where('account_id', '=', owner.accountId)
    .where('key', '=', owner.key)
    .where('owner', '=', owner.owner)
    .where('response_status', 'is', null)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** Keeps the answer (exact bytes) on the row, if the row is still this owner's. */
export async function storeAnswer(
  db: Db,
  owner: KeyOwner,
  status: number,
  body: string | null,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response_status: status, response_body: body })
    .where('account_id', '=', owner.accountId)
    .where('key', '=', owner.key)
    .where('owner', '=', owner.owner)
    .execute();
}

/**
 * After a 5xx: a row on which no resource was recorded is deleted (nothing was charged, the key
 * is free for any retry); a row with a resource (a commit whose answer was lost, e.g. the
 * connection broke after Postgres committed) is kept and its lease ended, so the next repeat takes
 * it over at once and answers from the resource instead of charging again.
 */
export async function releaseAfterFailure(db: Db, owner: KeyOwner): Promise<void> {
  await sql`
    WITH freed AS (
      DELETE FROM idempotency_keys
       WHERE account_id = ${owner.accountId} AND key = ${owner.key} AND owner = ${owner.owner}::uuid
         AND resource_id IS NULL)
    UPDATE idempotency_keys SET lease_until = now()
     WHERE account_id = ${owner.accountId} AND key = ${owner.key} AND owner = ${owner.owner}::uuid
       AND resource_id IS NOT NULL AND response_status IS NULL`.execute(db);
}
