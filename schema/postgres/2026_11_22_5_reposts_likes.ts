import { sql, type Kysely } from 'kysely';

/**
 * Reposts (paid, $1) and likes (free). A repost commits with its ledger movement and outbox row
 * exactly like a post (movement_id, unique: one repost per movement). UNIQUE (reposter_id, post_id)
 * is what decides a race between two reposts of the same post by the same account: the loser's
 * whole transaction (movement, outbox row, event) rolls back, so no money moves for it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('reposts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('reposter_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('post_id', 'uuid', (c) => c.notNull().references('posts.id'))
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('reposts_once_per_account', ['reposter_id', 'post_id'])
    .execute();
  // repost_count of a post.
  await db.schema.createIndex('reposts_by_post').on('reposts').column('post_id').execute();

  await db.schema
    .createTable('likes')
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('post_id', 'uuid', (c) => c.notNull().references('posts.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('likes_pkey', ['account_id', 'post_id'])
    .execute();
  // like_count of a post (the primary key leads with the account).
  await db.schema.createIndex('likes_by_post').on('likes').column('post_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('likes').execute();
  await db.schema.dropTable('reposts').execute();
}
