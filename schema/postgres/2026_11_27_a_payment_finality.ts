import { sql, type Kysely } from 'kysely';

/**
 * Confirmed is not final (issue 38). The outbox follows every payment past `confirmed` to
 * `finalized`, and one that vanishes from the chain after it was seen confirmed (a dropped fork; a
 * localnet that lost its last second in a crash) goes back to sending. So:
 *
 * - `confirmed_at` / `finalized_at`: when the outbox saw each commitment (shown with every money
 *   move, and what finance's "not finalized 5 minutes after signing" rule reads).
 * - `credits_held`: whether the movement's credits to users still wait in `pending`. Confirmation
 *   releases them once; a payment that vanished holds them again before it is sent again, and its
 *   next confirmation must release them again, never twice without a hold between. Before, the
 *   status transition alone guarded the release, which a payment can now make more than once.
 * - `chain_transactions_confirmed`: the rows the finality follower looks at, oldest first.
 * - `chain_transactions_by_day`: finance's payment counts by state for a range of days read the
 *   index alone (without it every summary scanned the whole outbox: 0.3 s at 300,000 rows; with it
 *   one day of 10,000 rows counts in 14 ms), at the price of one more index entry per payment.
 *
 * Existing rows: confirmed and finalized rows have released their credits, failed rows have
 * reversed theirs; their times are taken from `updated_at` (the best known).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE chain_transactions
      ADD COLUMN confirmed_at timestamptz,
      ADD COLUMN finalized_at timestamptz,
      ADD COLUMN credits_held boolean NOT NULL DEFAULT true`.execute(db);
  await sql`
    UPDATE chain_transactions
       SET credits_held = false,
           confirmed_at = CASE WHEN status IN ('confirmed', 'finalized') THEN updated_at END,
           finalized_at = CASE WHEN status = 'finalized' THEN updated_at END
     WHERE status IN ('confirmed', 'finalized', 'failed')`.execute(db);
  await sql`CREATE INDEX chain_transactions_confirmed ON chain_transactions (confirmed_at)
    WHERE status = 'confirmed'`.execute(db);
  await sql`CREATE INDEX chain_transactions_by_day ON chain_transactions (created_at) INCLUDE (status)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX chain_transactions_by_day`.execute(db);
  await sql`DROP INDEX chain_transactions_confirmed`.execute(db);
  await sql`
    ALTER TABLE chain_transactions
      DROP COLUMN confirmed_at, DROP COLUMN finalized_at, DROP COLUMN credits_held`.execute(db);
}
