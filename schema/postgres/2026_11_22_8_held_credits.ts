import { sql, type Kysely } from 'kysely';

/**
 * Credits wait for the chain. A paid post, reply, quote, repost or send credits its recipients
 * (the parent author's share, the treasury, a send's recipient) into `pending`, not `balance`:
 * the money is not in their wallet until the transaction confirms, so they cannot spend it
 * before. Confirmation moves it to `balance`; an on-chain failure takes it back out of `pending`,
 * which always holds it, so a reversal can never be blocked by a recipient who spent the money.
 *
 * From here on only user rows carry a stored balance. Platform accounts (treasury, fee pool, ...)
 * are credited by nearly every movement: updating one row each time made every paid post wait
 * for the treasury row's lock. Their balance is the sum of their legs (indexed by account).
 * Existing platform rows are zeroed so stored balances and leg sums can never disagree.
 *
 * The outbox gains the `sent` state (the cluster executed the transaction: commitment processed)
 * and `finalized`, and keeps every signature a re-sign replaced, so the indexer can prove that
 * none of them landed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('ledger_accounts')
    .addColumn('pending', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('ledger_accounts')
    .addCheckConstraint('ledger_accounts_pending_non_negative', sql`pending >= 0`)
    .execute();

  await sql`UPDATE ledger_accounts SET balance = 0, total_earned = 0, total_spent = 0 WHERE kind <> 'user'`.execute(
    db,
  );

  await sql`ALTER TABLE chain_transactions DROP CONSTRAINT chain_transactions_status_check`.execute(db);
  await sql`ALTER TABLE chain_transactions ADD CONSTRAINT chain_transactions_status_check
    CHECK (status IN ('signed', 'sent', 'confirmed', 'finalized', 'failed'))`.execute(db);
  await db.schema
    .alterTable('chain_transactions')
    .addColumn('replaced_signatures', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .execute();
  await sql`DROP INDEX chain_transactions_unfinished`.execute(db);
  await sql`CREATE INDEX chain_transactions_unfinished ON chain_transactions (created_at)
    WHERE status IN ('signed', 'sent')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX chain_transactions_unfinished`.execute(db);
  await sql`CREATE INDEX chain_transactions_unfinished ON chain_transactions (created_at) WHERE status = 'signed'`.execute(
    db,
  );
  await db.schema.alterTable('chain_transactions').dropColumn('replaced_signatures').execute();
  await sql`ALTER TABLE chain_transactions DROP CONSTRAINT chain_transactions_status_check`.execute(db);
  await sql`ALTER TABLE chain_transactions ADD CONSTRAINT chain_transactions_status_check
    CHECK (status IN ('signed', 'confirmed', 'failed'))`.execute(db);
  await db.schema.alterTable('ledger_accounts').dropColumn('pending').execute();
}
