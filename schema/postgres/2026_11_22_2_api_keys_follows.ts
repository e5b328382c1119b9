import { sql, type Kysely } from 'kysely';

/**
 * Custodial wallet secrets on accounts, API keys (hash only) and follows.
 *
 * An API key is stored as its lookup id (the first characters of its random part, unique, shown
 * in listings) and the SHA-256 of the whole key; the key itself exists only in the answer that
 * created it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('wallet_secret', 'text') // sealed with WALLET_MASTER_KEY, the address as associated data
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key_hash', 'bytea', (c) => c.notNull())
    .addColumn('scopes', sql`text[]`, (c) =>
      c
        .notNull()
        .check(sql`scopes <@ ARRAY['read','post','engage','send']::text[] AND cardinality(scopes) > 0`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('api_keys_active_by_account')
    .on('api_keys')
    .column('account_id')
    .where(sql.ref('revoked_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('follows')
    .addColumn('follower_id', 'uuid', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('followee_id', 'uuid', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('follows_pkey', ['follower_id', 'followee_id'])
    .addCheckConstraint('follows_not_self', sql`follower_id <> followee_id`)
    .execute();
  await db.schema
    .createIndex('follows_by_followee')
    .on('follows')
    .columns(['followee_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('follows').execute();
  await db.schema.dropTable('api_keys').execute();
  await db.schema.alterTable('accounts').dropColumn('wallet_secret').execute();
}
