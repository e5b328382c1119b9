import { sql, type Selectable } from 'kysely';
import type { ChainTransactionsTable, ChainTransactionStatus } from './database.js';
import type { Db } from './db.js';

/** An outbox row (chain_transactions) as stored. */
export type OutboxRow = Selectable<ChainTransactionsTable>;

/** Where outbox row `id` is now: its status and current signature. Throws when absent. */
export async function outboxStatus(
  db: Db,
  id: string,
): Promise<{ status: ChainTransactionStatus; signature: string }> {
  return db
    .selectFrom('chain_transactions')
    .select(['status', 'signature'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** The outbox row paying movement `movementId` and the movement's debit (its one negative leg, positive). */
export async function outboxRowOfMovement(
  db: Db,
  movementId: string,
): Promise<{ id: string; signature: string; status: ChainTransactionStatus; debit: string }> {
  return db
    .selectFrom('chain_transactions')
    .select([
      'id',
      'signature',
      'status',
      sql<string>`(SELECT -min(amount) FROM ledger_legs WHERE movement_id = chain_transactions.movement_id)`.as(
        'debit',
      ),
    ])
    .where('movement_id', '=', movementId)
    .executeTakeFirstOrThrow();
}

/**
 * Unfinished outbox rows (`signed` or `sent`) older than `minAgeMs`, after `after` in
 * (created_at, id) order, at most `limit`. `cursor_at` is Postgres's own text of `created_at`: a
 * JS Date would drop the microseconds.
 */
export async function unfinishedOutboxRows(
  db: Db,
  options: { after: { createdAt: string; id: string } | null; minAgeMs: number; limit: number },
): Promise<Array<{ id: string; cursor_at: string }>> {
  const { after, minAgeMs } = options;
  let query = db
    .selectFrom('chain_transactions')
    .select(['id', sql<string>`created_at::text`.as('cursor_at')])
    // Exactly the predicate of the partial index chain_transactions_unfinished (created_at).
    .where('status', 'in', ['signed', 'sent'])
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${minAgeMs / 1000})`);
  if (after) {
    query = query.where(
      sql<boolean>`(created_at, id) > (${after.createdAt}::timestamptz, ${after.id}::uuid)`,
    );
  }
  return query.orderBy('created_at').orderBy('id').limit(options.limit).execute();
}
