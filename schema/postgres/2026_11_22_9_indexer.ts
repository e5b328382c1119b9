import { sql, type Kysely } from 'kysely';

/**
 * What the indexer and the event shipper need in Postgres:
 * - ledger legs are shipped to ClickHouse like domain events (`shipped_at`, a partial index on the
 *   unshipped ones), so analytics hold the ledger's money to the micro-dollar;
 * - every outbox transaction remembers the commitment it was last reconciled at and the verdict
 *   (the indexer checks at confirmed, then again at finalized, and resumes after a restart);
 * - the wallet follower keeps one cursor per followed address (newest signature seen, its slot),
 *   and looks up replaced signatures through a GIN index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ledger_legs').addColumn('shipped_at', 'timestamptz').execute();
  await sql`CREATE INDEX ledger_legs_unshipped ON ledger_legs (id) WHERE shipped_at IS NULL`.execute(db);

  await db.schema
    .alterTable('chain_transactions')
    .addColumn('reconciled_commitment', 'text', (c) =>
      c.check(sql`reconciled_commitment IN ('confirmed', 'finalized')`),
    )
    .addColumn('reconciled_status', 'text')
    .addColumn('reconciled_at', 'timestamptz')
    .execute();
  await sql`CREATE INDEX chain_transactions_to_reconcile ON chain_transactions (created_at)
    WHERE reconciled_commitment IS DISTINCT FROM 'finalized'`.execute(db);
  // The wallet follower asks whether a signature is one the outbox replaced (`&&` on the array).
  await sql`CREATE INDEX chain_transactions_replaced_signatures ON chain_transactions
    USING gin (replaced_signatures)`.execute(db);

  await db.schema
    .createTable('wallet_cursors')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('last_signature', 'text')
    .addColumn('last_slot', 'bigint')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('wallet_cursors').execute();
  await sql`DROP INDEX chain_transactions_replaced_signatures`.execute(db);
  await sql`DROP INDEX chain_transactions_to_reconcile`.execute(db);
  await db.schema
    .alterTable('chain_transactions')
    .dropColumn('reconciled_at')
    .dropColumn('reconciled_status')
    .dropColumn('reconciled_commitment')
    .execute();
  await sql`DROP INDEX ledger_legs_unshipped`.execute(db);
  await db.schema.alterTable('ledger_legs').dropColumn('shipped_at').execute();
}
