import { sql, type Kysely } from 'kysely';

/**
 * A second currency in the same double-entry ledger: the platform's native token (base units, 9
 * decimals), which the creator fund pays and the swap pool trades against USDC. A ledger account
 * holds one currency; a user has one account per currency (the native one created on first use),
 * each platform kind one per currency. Legs carry no currency of their own: a leg's currency is its
 * account's. A movement may mix currencies (a swap: native in, USDC out), so the deferred trigger
 * now checks that the legs sum to zero per currency, never across them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE ledger_accounts
    ADD COLUMN currency text NOT NULL DEFAULT 'usdc' CHECK (currency IN ('usdc', 'native'))`.execute(db);
  await sql`ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_account_id_key`.execute(db);
  await sql`ALTER TABLE ledger_accounts
    ADD CONSTRAINT ledger_accounts_account_currency_key UNIQUE (account_id, currency)`.execute(db);
  await sql`DROP INDEX ledger_accounts_one_per_platform_kind`.execute(db);
  await sql`CREATE UNIQUE INDEX ledger_accounts_one_per_platform_kind ON ledger_accounts (kind, currency)
    WHERE account_id IS NULL`.execute(db);
  await sql`INSERT INTO ledger_accounts (kind, currency)
    VALUES ('treasury', 'native'), ('creator_fund', 'native'), ('swap_pool', 'native'), ('external', 'native')`.execute(
    db,
  );

  await sql`ALTER TABLE ledger_movements DROP CONSTRAINT ledger_movements_kind_check`.execute(db);
  await sql`ALTER TABLE ledger_movements ADD CONSTRAINT ledger_movements_kind_check
    CHECK (kind IN ('post', 'repost', 'send', 'deposit', 'earn', 'reversal', 'swap', 'fund_payout'))`.execute(
    db,
  );

  await sql`
    CREATE OR REPLACE FUNCTION ledger_movement_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
                  WHERE l.movement_id = NEW.movement_id
                  GROUP BY a.currency HAVING sum(l.amount) <> 0) THEN
        RAISE EXCEPTION 'ledger movement % does not balance', NEW.movement_id USING ERRCODE = '23514';
      END IF;
      RETURN NULL;
    END $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION ledger_movement_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (SELECT coalesce(sum(amount), 0) FROM ledger_legs WHERE movement_id = NEW.movement_id) <> 0 THEN
        RAISE EXCEPTION 'ledger movement % does not balance', NEW.movement_id USING ERRCODE = '23514';
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql`ALTER TABLE ledger_movements DROP CONSTRAINT ledger_movements_kind_check`.execute(db);
  await sql`ALTER TABLE ledger_movements ADD CONSTRAINT ledger_movements_kind_check
    CHECK (kind IN ('post', 'repost', 'send', 'deposit', 'earn', 'reversal'))`.execute(db);
  await sql`DELETE FROM ledger_accounts WHERE currency = 'native'`.execute(db);
  await sql`DROP INDEX ledger_accounts_one_per_platform_kind`.execute(db);
  await sql`CREATE UNIQUE INDEX ledger_accounts_one_per_platform_kind ON ledger_accounts (kind) WHERE account_id IS NULL`.execute(
    db,
  );
  await sql`ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_account_currency_key`.execute(db);
  await sql`ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_account_id_key UNIQUE (account_id)`.execute(
    db,
  );
  await sql`ALTER TABLE ledger_accounts DROP COLUMN currency`.execute(db);
}
