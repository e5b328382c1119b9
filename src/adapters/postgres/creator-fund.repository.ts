import { sql } from 'kysely';
import type { CreatorFundEpochsTable } from './database.js';
import type { Db } from './db.js';
import type { Tx } from './tx.js';

/** Serialises planners across processes: each reads the fund's balance and spends from it. */
const PLAN_LOCK = 'ledgerfeed:creator-fund:plan';

/**
 * Runs `plan` in one transaction that first takes the planners' advisory lock (held until the
 * commit or rollback): everything `plan` writes through `tx` commits together, or nothing does.
 */
export async function inPlanningTransaction<T>(db: Db, plan: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${PLAN_LOCK}))`.execute(trx);
    return plan(trx);
  });
}

/** The recorded epoch starting at `epochStart`, if any. */
export async function epochRow(db: Db, epochStart: Date) {
  return db
    .selectFrom('creator_fund_epochs')
    .selectAll()
    .where('epoch_start', '=', epochStart)
    .executeTakeFirst();
}

/** The payout batches of an epoch with their outbox row's status and signature, by batch index. */
export async function epochBatchRows(db: Db, epochStart: Date) {
  return db
    .selectFrom('creator_fund_batches as b')
    .innerJoin('chain_transactions as ct', 'ct.id', 'b.chain_transaction_id')
    .select([
      'b.batch_index',
      'b.chain_transaction_id',
      'b.transfers',
      'b.total',
      'ct.status',
      'ct.signature',
    ])
    .where('b.epoch_start', '=', epochStart)
    .orderBy('b.batch_index')
    .execute();
}

/** The custodial wallet address of each of `accountIds` that has one. */
export async function walletAddresses(db: Db, accountIds: readonly string[]): Promise<Map<string, string>> {
  const wallets = new Map<string, string>();
  if (accountIds.length === 0) return wallets;
  const rows = await db
    .selectFrom('accounts')
    .select(['id', 'wallet_address'])
    .where('id', 'in', [...accountIds])
    .execute();
  for (const row of rows) if (row.wallet_address) wallets.set(row.id, row.wallet_address);
  return wallets;
}

/** The recorded outcome of the epoch starting at `epochStart`, read in the planning transaction. */
export async function epochOutcome(
  tx: Tx,
  epochStart: Date,
): Promise<CreatorFundEpochsTable['outcome'] | undefined> {
  const row = await tx
    .selectFrom('creator_fund_epochs')
    .select('outcome')
    .where('epoch_start', '=', epochStart)
    .executeTakeFirst();
  return row?.outcome;
}

export async function deleteEpoch(tx: Tx, epochStart: Date): Promise<void> {
  await tx.deleteFrom('creator_fund_epochs').where('epoch_start', '=', epochStart).execute();
}

/** Native base units of the payout batches whose transaction is not executed yet (`signed` or `sent`). */
export async function inFlightPayoutTotal(tx: Tx): Promise<bigint> {
  const inFlight = await tx
    .selectFrom('creator_fund_batches as b')
    .innerJoin('chain_transactions as ct', 'ct.id', 'b.chain_transaction_id')
    .select(sql<string>`coalesce(sum(b.total), 0)::text`.as('total'))
    .where('ct.status', 'in', ['signed', 'sent'])
    .executeTakeFirstOrThrow();
  return BigInt(inFlight.total);
}

/** An epoch's plan, or why nothing was planned (native base units). */
export interface EpochRecord {
  epochStart: Date;
  epochEnd: Date;
  budget: bigint;
  fundAvailable: bigint;
  paidTotal: bigint;
  authorCount: number;
  outcome: CreatorFundEpochsTable['outcome'];
  note: string;
}

export async function insertEpoch(tx: Tx, epoch: EpochRecord): Promise<void> {
  await tx
    .insertInto('creator_fund_epochs')
    .values({
      epoch_start: epoch.epochStart,
      epoch_end: epoch.epochEnd,
      budget: epoch.budget,
      fund_available: epoch.fundAvailable,
      paid_total: epoch.paidTotal,
      author_count: epoch.authorCount,
      outcome: epoch.outcome,
      note: epoch.note,
    })
    .execute();
}

/** One payout batch of an epoch: its ledger movement, its outbox row and the payouts it carries. */
export interface PayoutBatchRecord {
  epochStart: Date;
  batchIndex: number;
  movementId: string;
  chainTransactionId: string;
  /** Native base units, the sum of the payouts' amounts. */
  total: bigint;
  payouts: ReadonlyArray<{ authorId: string; score: bigint; amount: bigint }>;
}

/** The batch row, then one payout row per author it pays. */
export async function insertPayoutBatch(tx: Tx, batch: PayoutBatchRecord): Promise<void> {
  await tx
    .insertInto('creator_fund_batches')
    .values({
      epoch_start: batch.epochStart,
      batch_index: batch.batchIndex,
      movement_id: batch.movementId,
      chain_transaction_id: batch.chainTransactionId,
      total: batch.total,
      transfers: batch.payouts.length,
    })
    .execute();
  await tx
    .insertInto('creator_fund_payouts')
    .values(
      batch.payouts.map((p) => ({
        epoch_start: batch.epochStart,
        account_id: p.authorId,
        score: p.score,
        amount: p.amount,
        batch_index: batch.batchIndex,
      })),
    )
    .execute();
}
