import { sql, type Kysely } from 'kysely';

/**
 * Posts and the chain-transaction outbox. A paid post commits in one Postgres transaction with its
 * ledger movement and its signed Solana transaction (bytes, signature, blockhash, last valid block
 * height): the signature (`swap_tx`) exists before anything is sent, so it is never lost, and the
 * payments worker resumes every unfinished row after a crash.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('chain_transactions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('signature', 'text', (c) => c.notNull().unique())
    .addColumn('wire', 'bytea', (c) => c.notNull())
    .addColumn('blockhash', 'text', (c) => c.notNull())
    .addColumn('last_valid_block_height', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('signed')
        .check(sql`status IN ('signed', 'confirmed', 'failed')`),
    )
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('error', 'jsonb')
    .addColumn('slot', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`CREATE INDEX chain_transactions_unfinished ON chain_transactions (created_at) WHERE status = 'signed'`.execute(
    db,
  );

  await db.schema
    .createTable('posts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('author_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type IN ('post', 'reply', 'quote')`))
    .addColumn('content', 'text', (c) => c.notNull().check(sql`char_length(content) BETWEEN 1 AND 1000`))
    .addColumn('parent_id', 'uuid', (c) => c.references('posts.id'))
    .addColumn('quoted_post_id', 'uuid', (c) => c.references('posts.id'))
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint(
      'posts_reference_matches_type',
      sql`(type = 'reply') = (parent_id IS NOT NULL) AND (type = 'quote') = (quoted_post_id IS NOT NULL)`,
    )
    .execute();
  await db.schema.createIndex('posts_by_author').on('posts').columns(['author_id', 'created_at']).execute();

  await db.schema
    .createTable('domain_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'uuid')
    .addColumn('post_id', 'uuid')
    .addColumn('amount_micro', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('payload', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('shipped_at', 'timestamptz')
    .execute();
  await sql`CREATE INDEX domain_events_unshipped ON domain_events (occurred_at) WHERE shipped_at IS NULL`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('domain_events').execute();
  await db.schema.dropTable('posts').execute();
  await db.schema.dropTable('chain_transactions').execute();
}
