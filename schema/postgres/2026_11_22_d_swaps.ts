import { sql, type Kysely } from 'kysely';

/**
 * Swaps to USDC: native tokens sold to the platform's constant-product pool. A swap commits with
 * its ledger movement (kind 'swap': the user's native tokens to the pool, the pool's USDC to the
 * user) and its signed transaction in the outbox, like a send. The row keeps the quote: the
 * reserves it was priced against, so the sequence of swaps on the pool can be replayed and
 * checked against the chain. Amounts: native base units and micro-USD (bigint).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('swaps')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('amount_tokens', 'bigint', (c) => c.notNull().check(sql`amount_tokens > 0`))
    .addColumn('fee_tokens', 'bigint', (c) => c.notNull().check(sql`fee_tokens >= 0`))
    .addColumn('amount_usdc', 'bigint', (c) => c.notNull().check(sql`amount_usdc > 0`))
    .addColumn('reserve_native_before', 'bigint', (c) => c.notNull())
    .addColumn('reserve_usdc_before', 'bigint', (c) => c.notNull())
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('swaps_by_account').on('swaps').columns(['account_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('swaps').execute();
}
