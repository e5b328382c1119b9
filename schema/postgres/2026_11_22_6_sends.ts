import { sql, type Kysely } from 'kysely';

/**
 * USDC sends between users. A send commits with its ledger movement and outbox row exactly like
 * a post (movement_id, unique: one send per movement); the memo (ours: at most 200 characters)
 * is also on chain in the transaction's Memo.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sends')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('sender_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('recipient_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('amount_micro', 'bigint', (c) => c.notNull().check(sql`amount_micro > 0`))
    .addColumn('memo', 'text')
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('sends_not_to_self', sql`sender_id <> recipient_id`)
    .execute();
  await db.schema.createIndex('sends_by_sender').on('sends').column('sender_id').execute();
  await db.schema.createIndex('sends_by_recipient').on('sends').column('recipient_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sends').execute();
}
