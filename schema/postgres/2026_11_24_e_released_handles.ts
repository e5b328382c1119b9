import { sql, type Kysely } from 'kysely';

/**
 * Handles given up by a rename, reserved for their previous owner until `reserved_until` (the
 * 7-day handle-change cooldown). Sends resolve a recipient by handle, so a released handle that
 * anyone could register at once would receive what was meant for its old owner. One row per
 * handle: a later release of the same handle replaces it; taking the handle (its owner, or anyone
 * once it expired) removes it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('released_handles')
    .addColumn('handle', 'text', (c) => c.primaryKey().check(sql`handle ~ '^[a-z0-9_]{3,20}$'`))
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('released_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('reserved_until', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('released_handles_by_account')
    .on('released_handles')
    .column('account_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('released_handles').execute();
}
