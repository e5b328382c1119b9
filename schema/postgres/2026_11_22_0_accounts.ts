import { sql, type Kysely } from 'kysely';

/**
 * Accounts: the identity every post, key and ledger account hangs off. Handle rules are the
 * spec's (3-20 of a-z, 0-9, _), enforced here as well as in the service so no path can store
 * a handle the API would refuse.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('handle', 'text', (c) =>
      c
        .notNull()
        .unique()
        .check(sql`handle ~ '^[a-z0-9_]{3,20}$'`),
    )
    .addColumn('display_name', 'text', (c) => c.notNull().check(sql`char_length(display_name) <= 50`))
    .addColumn('bio', 'text', (c) =>
      c
        .notNull()
        .defaultTo('')
        .check(sql`char_length(bio) <= 160`),
    )
    .addColumn('avatar_url', 'text')
    .addColumn('social_username', 'text')
    .addColumn('role', 'text', (c) =>
      c
        .notNull()
        .defaultTo('user')
        .check(sql`role IN ('user', 'finance', 'admin')`),
    )
    .addColumn('wallet_address', 'text', (c) => c.unique())
    .addColumn('handle_changed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('accounts').execute();
}
