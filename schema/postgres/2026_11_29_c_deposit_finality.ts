import { sql, type Kysely } from 'kysely';

/**
 * Deposits are followed to `finalized` too (issue 49 item 7). A deposit has no outbox row: the
 * platform did not sign it, it found it (the wallet follower) or waited for it (the faucets)
 * already confirmed, and credited it keyed `deposit:<signature>`. Until now nothing looked at it
 * again, so its history entry said `confirmed` forever.
 *
 * - `deposit_transactions`: one row per deposit movement, its signature and how far the chain has
 *   taken it (`confirmed`, then `finalized`), with the times and the slot, as `chain_transactions`
 *   has them for payments. The worker's finality follower reads the confirmed ones (oldest first,
 *   `deposit_transactions_confirmed`) in the same round as the payments.
 * - `missing_since`: when the follower last found the chain without it in two looks in a row (a
 *   dropped fork); null while the chain knows it. A deposit cannot be sent again as a payment can
 *   (someone else signed it): it is flagged and logged, not reversed.
 * - The row is written by a trigger on the movement's INSERT, in the transaction that credits the
 *   deposit, so every path that credits one (wallet follower, `cli fund`, the portal's faucet, the
 *   test helpers) is followed, and a crash can never leave a credited deposit unfollowed.
 *
 * Existing deposits get their row now, `confirmed` as of their credit: the follower finalizes them.
 */
/**
 * `deposit:` and a transaction signature (base58, 64-88 characters): only a key naming a real
 * signature is followed (a malformed one would make a cluster refuse the whole status call).
 */
const DEPOSIT_KEY = sql.lit('^deposit:[1-9A-HJ-NP-Za-km-z]{64,88}$');

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE deposit_transactions (
      movement_id uuid PRIMARY KEY REFERENCES ledger_movements (id),
      signature text NOT NULL UNIQUE,
      status text NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'finalized')),
      slot bigint,
      confirmed_at timestamptz NOT NULL,
      finalized_at timestamptz,
      missing_since timestamptz)`.execute(db);
  await sql`CREATE INDEX deposit_transactions_confirmed ON deposit_transactions (confirmed_at)
    WHERE status = 'confirmed'`.execute(db);
  await sql`
    CREATE FUNCTION follow_deposit() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO deposit_transactions (movement_id, signature, confirmed_at)
      VALUES (NEW.id, substr(NEW.idempotency_key, length('deposit:') + 1), NEW.created_at)
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$`.execute(db);
  await sql`
    CREATE TRIGGER ledger_movements_follow_deposit
      AFTER INSERT ON ledger_movements
      FOR EACH ROW
      WHEN (NEW.kind = 'deposit' AND NEW.idempotency_key ~ ${DEPOSIT_KEY})
      EXECUTE FUNCTION follow_deposit()`.execute(db);
  await sql`
    INSERT INTO deposit_transactions (movement_id, signature, confirmed_at)
    SELECT id, substr(idempotency_key, length('deposit:') + 1), created_at
      FROM ledger_movements
     WHERE kind = 'deposit' AND idempotency_key ~ ${DEPOSIT_KEY}
    ON CONFLICT DO NOTHING`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER ledger_movements_follow_deposit ON ledger_movements`.execute(db);
  await sql`DROP FUNCTION follow_deposit()`.execute(db);
  await sql`DROP TABLE deposit_transactions`.execute(db);
}
