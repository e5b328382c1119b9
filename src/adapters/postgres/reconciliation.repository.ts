import { sql } from 'kysely';
import type { Db } from './db.js';
import type { Tx } from './tx.js';

/** An outbox transaction claimed for a verdict, with its movement's creation time. */
export interface ReconcileCandidateRow {
  id: string;
  movement_id: string;
  signature: string;
  status: string;
  created_at: Date;
  movement_created_at: Date;
  /** Postgres's own text of `created_at` (microseconds), for a keyset cursor. */
  created_at_key: string;
  reconciled_commitment: 'confirmed' | 'finalized' | null;
}

export interface ReconcileClaim {
  /** Rows per round. */
  limit: number;
  /** Re-check rows already reconciled, created at or after this time. */
  since?: Date;
  /** With `since`: only rows created before this time. */
  until?: Date;
  /** With `since`: only rows after this (created_at, id) keyset position; `createdAt` is Postgres text. */
  after?: { createdAt: string; id: string };
  /** Without `since`: a row checked at confirmed is taken again once its check is this old. */
  finalizedRecheckMs: number;
  /** Without `since`: a row still `signed` or `sent` is taken only once it is this old. */
  settlingGraceMs: number;
  /**
   * Without `since`: while the block follower's cursor moved within this many ms, a row never
   * checked whose slot the follower has not read yet waits for it (its block will be read anyway,
   * so the round judges it from followed_transactions instead of a getTransaction of its own). A
   * cursor older than this (no follower running, or one stuck) leaves every row to be fetched.
   */
  followerFreshMs?: number;
}

/**
 * Opens one round's transaction and claims up to `limit` outbox transactions that need a verdict:
 * with `since`, every row from then on; otherwise rows never checked, and rows checked at
 * confirmed long enough ago to be finalized, leaving alone the rows the payments worker is still
 * settling. The rows are taken FOR UPDATE SKIP LOCKED, so two indexers never check the same row
 * at once; `work` runs in the same transaction, and what it writes (and whatever it does before
 * returning, such as ClickHouse inserts) happens before the commit that releases the rows.
 * `work` is called with no rows too (the transaction then commits nothing).
 */
export async function withReconcileRound<T>(
  db: Db,
  claim: ReconcileClaim,
  work: (claimed: ReconcileCandidateRow[], tx: Tx) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const finalizedBefore = new Date(Date.now() - claim.finalizedRecheckMs);
    const settlingBefore = new Date(Date.now() - claim.settlingGraceMs);
    const { rows } = await sql<ReconcileCandidateRow>`
      SELECT c.id, c.movement_id, c.signature, c.status, c.created_at, c.reconciled_commitment,
             m.created_at AS movement_created_at, c.created_at::text AS created_at_key
        FROM chain_transactions c JOIN ledger_movements m ON m.id = c.movement_id
       WHERE ${
         claim.since
           ? sql`c.created_at >= ${claim.since}
             ${claim.until ? sql`AND c.created_at < ${claim.until}` : sql``}
             ${claim.after ? sql`AND (c.created_at, c.id) > (${claim.after.createdAt}::timestamptz, ${claim.after.id}::uuid)` : sql``}`
           : sql`c.reconciled_commitment IS DISTINCT FROM 'finalized'
             AND (c.reconciled_commitment IS NULL OR c.reconciled_at < ${finalizedBefore})
             AND (c.status NOT IN ('signed', 'sent') OR c.created_at < ${settlingBefore})
             ${
               claim.followerFreshMs === undefined
                 ? sql``
                 : sql`AND (c.reconciled_commitment IS NOT NULL OR c.slot IS NULL
                      OR NOT EXISTS (SELECT 1 FROM block_follower_cursor f
                                      WHERE f.updated_at > now() - make_interval(secs => ${claim.followerFreshMs / 1000}))
                      OR c.slot <= (SELECT f.slot FROM block_follower_cursor f))`
             }`
       }
       -- Rows never checked first, then those checked longest ago: rows judged missing (checked
       -- every round, never finalized) must not hold back newer rows behind a full round.
       ORDER BY ${claim.since ? sql`` : sql`c.reconciled_at NULLS FIRST,`} c.created_at, c.id
       LIMIT ${claim.limit}
         FOR UPDATE OF c SKIP LOCKED`.execute(trx);
    return work(rows, trx);
  });
}

/** One leg of a movement, or of its reversal, with the wallet of the user account it moves. */
export interface MovementLegRow {
  /** The movement asked about (a reversal's legs are listed under the movement it reverses). */
  movement_id: string;
  /** The ledger account's kind: 'user', 'treasury', 'external', ... */
  kind: string;
  currency: string;
  wallet_address: string | null;
  amount: bigint;
}

/**
 * The legs of each movement and, when it was reversed, the reversal's legs under the original's
 * id: a reversed movement sums to nothing having moved.
 */
export async function legsOfMovements(db: Db, movementIds: readonly string[]): Promise<MovementLegRow[]> {
  const { rows } = await sql<MovementLegRow>`
    WITH movements AS (
      SELECT id, id AS original FROM ledger_movements WHERE id = ANY(${movementIds}::uuid[])
      UNION ALL
      SELECT id, reverses_id FROM ledger_movements WHERE reverses_id = ANY(${movementIds}::uuid[]))
    SELECT m.original AS movement_id, a.kind, a.currency, acc.wallet_address, l.amount
      FROM movements m
      JOIN ledger_legs l ON l.movement_id = m.id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
      LEFT JOIN accounts acc ON acc.id = a.account_id`.execute(db);
  return rows;
}

/** A verdict's mark on its outbox row; a null commitment means the row is looked at again. */
export interface ReconcileMark {
  id: string;
  commitment: string | null;
  status: string;
}

/** Records each claimed row's verdict, checked at `at`. */
export async function markReconciled(tx: Tx, marks: readonly ReconcileMark[], at: Date): Promise<void> {
  // Every row's mark in one statement: a round of hundreds of rows is one round trip.
  await sql`
    UPDATE chain_transactions c
       SET reconciled_commitment = m.commitment, reconciled_status = m.status, reconciled_at = ${at}
      FROM unnest(${marks.map((m) => m.id)}::uuid[], ${marks.map((m) => m.commitment)}::text[],
                  ${marks.map((m) => m.status)}::text[]) AS m (id, commitment, status)
     WHERE c.id = m.id`.execute(tx);
}

/** Seconds since the oldest outbox transaction not yet reconciled at confirmed was signed (0: none). */
export async function unreconciledAgeSeconds(db: Db): Promise<number> {
  const row = await db
    .selectFrom('chain_transactions')
    .select(sql<number | null>`extract(epoch FROM now() - min(created_at))::float8`.as('lag'))
    .where('reconciled_commitment', 'is', null)
    .executeTakeFirst();
  return row?.lag ?? 0;
}
