import { sql, type Kysely } from 'kysely';

/**
 * The double-entry ledger (micro-USD, bigint). Balances live on ledger_accounts and change only
 * with a leg; a user's balance can never be negative (CHECK, and the debit is one conditional
 * UPDATE so concurrent requests cannot overspend). A deferred constraint trigger refuses, at
 * commit, any movement whose legs do not sum to zero.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ledger_accounts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('kind', 'text', (c) =>
      c
        .notNull()
        .check(sql`kind IN ('user', 'treasury', 'creator_fund', 'fee_pool', 'swap_pool', 'external')`),
    )
    .addColumn('account_id', 'uuid', (c) => c.unique().references('accounts.id').onDelete('restrict'))
    .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('total_earned', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('total_spent', 'bigint', (c) => c.notNull().defaultTo(0))
    // Only `external` (money from outside the platform) may go below zero.
    .addCheckConstraint('ledger_accounts_non_negative', sql`kind = 'external' OR balance >= 0`)
    .addCheckConstraint('ledger_accounts_user_has_account', sql`(kind = 'user') = (account_id IS NOT NULL)`)
    .execute();
  await sql`CREATE UNIQUE INDEX ledger_accounts_one_per_platform_kind ON ledger_accounts (kind) WHERE account_id IS NULL`.execute(
    db,
  );
  await sql`INSERT INTO ledger_accounts (kind) VALUES ('treasury'), ('creator_fund'), ('fee_pool'), ('swap_pool'), ('external')`.execute(
    db,
  );

  await db.schema
    .createTable('ledger_movements')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('kind', 'text', (c) =>
      c.notNull().check(sql`kind IN ('post', 'repost', 'send', 'deposit', 'earn', 'reversal')`),
    )
    .addColumn('idempotency_key', 'text', (c) => c.unique())
    .addColumn('reverses_id', 'uuid', (c) => c.unique().references('ledger_movements.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('ledger_legs')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('movement_id', 'uuid', (c) => c.notNull().references('ledger_movements.id'))
    .addColumn('ledger_account_id', 'uuid', (c) => c.notNull().references('ledger_accounts.id'))
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount <> 0`))
    // How the leg counted toward the user's totals, so a reversal can undo exactly that.
    .addColumn('counts', 'text', (c) =>
      c
        .notNull()
        .defaultTo('none')
        .check(sql`counts IN ('spent', 'earned', 'none')`),
    )
    .execute();
  await db.schema.createIndex('ledger_legs_by_movement').on('ledger_legs').column('movement_id').execute();
  await db.schema
    .createIndex('ledger_legs_by_account')
    .on('ledger_legs')
    .columns(['ledger_account_id', 'id'])
    .execute();

  await sql`
    CREATE FUNCTION ledger_movement_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (SELECT coalesce(sum(amount), 0) FROM ledger_legs WHERE movement_id = NEW.movement_id) <> 0 THEN
        RAISE EXCEPTION 'ledger movement % does not balance', NEW.movement_id USING ERRCODE = '23514';
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE CONSTRAINT TRIGGER ledger_legs_balanced AFTER INSERT ON ledger_legs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_movement_balanced()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER ledger_legs_balanced ON ledger_legs`.execute(db);
  await sql`DROP FUNCTION ledger_movement_balanced()`.execute(db);
  await db.schema.dropTable('ledger_legs').execute();
  await db.schema.dropTable('ledger_movements').execute();
  await db.schema.dropTable('ledger_accounts').execute();
}
