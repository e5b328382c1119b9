import { sql, type Kysely } from 'kysely';

/**
 * The creator fund's epochs, their batches and their per-author payouts. An epoch's plan (every
 * author's amount, the batch it is paid in, each batch's ledger movement and signed transaction in
 * the outbox) commits in ONE Postgres transaction before anything is sent, keyed by the epoch's
 * start: a run that crashes and runs again finds the plan and only drives its outbox rows, so an
 * epoch is paid exactly once. Amounts are native-token base units (bigint).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('creator_fund_epochs')
    .addColumn('epoch_start', 'timestamptz', (c) => c.primaryKey())
    .addColumn('epoch_end', 'timestamptz', (c) => c.notNull())
    // The configured budget when the epoch was planned, and what the fund could pay then.
    .addColumn('budget', 'bigint', (c) => c.notNull().check(sql`budget >= 0`))
    .addColumn('fund_available', 'bigint', (c) => c.notNull().check(sql`fund_available >= 0`))
    .addColumn('paid_total', 'bigint', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`paid_total >= 0`),
    )
    .addColumn('author_count', 'integer', (c) => c.notNull().defaultTo(0))
    // planned: batches in the outbox (their rows say sent/confirmed/failed); no_engagement: nobody
    // to pay (final); unfunded: the fund was empty, nothing recorded but this row, which a later
    // run replaces once the fund is topped up.
    .addColumn('outcome', 'text', (c) =>
      c.notNull().check(sql`outcome IN ('planned', 'no_engagement', 'unfunded')`),
    )
    .addColumn('note', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('planned_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('creator_fund_epochs_window', sql`epoch_end > epoch_start`)
    .execute();

  await db.schema
    .createTable('creator_fund_batches')
    .addColumn('epoch_start', 'timestamptz', (c) =>
      c.notNull().references('creator_fund_epochs.epoch_start').onDelete('restrict'),
    )
    .addColumn('batch_index', 'integer', (c) => c.notNull())
    .addColumn('movement_id', 'uuid', (c) => c.notNull().unique().references('ledger_movements.id'))
    .addColumn('chain_transaction_id', 'uuid', (c) =>
      c.notNull().unique().references('chain_transactions.id'),
    )
    .addColumn('total', 'bigint', (c) => c.notNull().check(sql`total > 0`))
    .addColumn('transfers', 'integer', (c) => c.notNull().check(sql`transfers > 0`))
    .addPrimaryKeyConstraint('creator_fund_batches_pk', ['epoch_start', 'batch_index'])
    .execute();

  await db.schema
    .createTable('creator_fund_payouts')
    .addColumn('epoch_start', 'timestamptz', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('score', 'bigint', (c) => c.notNull().check(sql`score > 0`))
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('batch_index', 'integer', (c) => c.notNull())
    // One payout per author per epoch: the database itself refuses paying someone twice.
    .addPrimaryKeyConstraint('creator_fund_payouts_pk', ['epoch_start', 'account_id'])
    .addForeignKeyConstraint(
      'creator_fund_payouts_batch',
      ['epoch_start', 'batch_index'],
      'creator_fund_batches',
      ['epoch_start', 'batch_index'],
    )
    .execute();
  await db.schema
    .createIndex('creator_fund_payouts_by_account')
    .on('creator_fund_payouts')
    .columns(['account_id', 'epoch_start'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('creator_fund_payouts').execute();
  await db.schema.dropTable('creator_fund_batches').execute();
  await db.schema.dropTable('creator_fund_epochs').execute();
}
