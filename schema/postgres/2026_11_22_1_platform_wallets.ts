import { sql, type Kysely } from 'kysely';

/**
 * The platform's own keys (fee payer, treasury, creator fund, pool authority, mint authorities,
 * mints created by the bootstrap), one row per role. Secrets are sealed with WALLET_MASTER_KEY;
 * a row without one is an address configured from outside (we hold no key for it).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('platform_wallets')
    .addColumn('role', 'text', (c) => c.primaryKey())
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('sealed_secret', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('platform_wallets').execute();
}
