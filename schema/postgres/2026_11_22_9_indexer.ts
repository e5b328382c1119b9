import { sql, type Kysely } from 'kysely';

/**
 * What the indexer and the event shipper need in Postgres:
 * - domain events and ledger legs are shipped to ClickHouse by a cursor in commit order, not by
 *   marking rows: each row records the id of the transaction that wrote it (`txid`), and the
 *   shipper takes rows after its cursor whose transaction is below the oldest one still running
 *   (`pg_snapshot_xmin`), so a row committed late is never skipped and no row is written twice.
 *   Marking 50,000 rows shipped cost more than shipping them; a cursor is one row per stream.
 *   (domain_events.shipped_at, the marking design, goes.)
 * - every outbox transaction remembers the commitment it was last reconciled at and the verdict
 *   (the indexer checks at confirmed, then again at finalized, and resumes after a restart);
 * - the wallet follower keeps one cursor per followed address (newest signature seen, its slot),
 *   and looks up replaced signatures through a GIN index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX domain_events_unshipped`.execute(db);
  await sql`ALTER TABLE domain_events DROP COLUMN shipped_at,
    ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY,
    ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`.execute(db);
  await sql`CREATE INDEX domain_events_shipping_order ON domain_events (txid, seq)`.execute(db);
  await sql`ALTER TABLE ledger_legs ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`.execute(db);
  await sql`CREATE INDEX ledger_legs_shipping_order ON ledger_legs (txid, id)`.execute(db);
  await db.schema
    .createTable('shipper_cursors')
    .addColumn('stream', 'text', (c) => c.primaryKey())
    .addColumn('last_txid', sql`xid8`, (c) => c.notNull().defaultTo(sql`'0'::xid8`))
    .addColumn('last_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`INSERT INTO shipper_cursors (stream) VALUES ('events'), ('legs')`.execute(db);

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
  await db.schema.dropTable('shipper_cursors').execute();
  await sql`ALTER TABLE ledger_legs DROP COLUMN txid`.execute(db);
  await sql`ALTER TABLE domain_events DROP COLUMN txid, DROP COLUMN seq, ADD COLUMN shipped_at timestamptz`.execute(
    db,
  );
  await sql`CREATE INDEX domain_events_unshipped ON domain_events (occurred_at) WHERE shipped_at IS NULL`.execute(
    db,
  );
}
