import { sql } from 'kysely';
import type { Db } from './db.js';
import type { OutboxStatus } from '../../domain/ledger/payment-state.js';

/**
 * The latest `limit` creator-fund epochs, newest first, each with its batches' outbox states:
 * how many batches, how many still in flight (signed or sent) or failed, the total of the failed
 * ones (native base units, as text) and the batches' current signatures in batch order.
 */
export async function epochSummaryRows(db: Db, limit: number) {
  const { rows } = await sql<{
    epoch_start: Date;
    epoch_end: Date;
    budget: bigint;
    fund_available: bigint;
    author_count: number;
    outcome: 'planned' | 'no_engagement' | 'unfunded';
    note: string;
    paid_total: bigint;
    failed_total: string;
    batches: number;
    open: number;
    failed: number;
    signatures: string[] | null;
  }>`
    SELECT e.epoch_start, e.epoch_end, e.budget, e.fund_available, e.author_count, e.outcome, e.note,
           e.paid_total,
           coalesce(sum(b.total) FILTER (WHERE ct.status = 'failed'), 0)::text AS failed_total,
           count(b.batch_index)::int AS batches,
           count(*) FILTER (WHERE ct.status IN ('signed', 'sent'))::int AS open,
           count(*) FILTER (WHERE ct.status = 'failed')::int AS failed,
           array_agg(ct.signature ORDER BY b.batch_index) FILTER (WHERE ct.signature IS NOT NULL) AS signatures
      FROM creator_fund_epochs e
      LEFT JOIN creator_fund_batches b ON b.epoch_start = e.epoch_start
      LEFT JOIN chain_transactions ct ON ct.id = b.chain_transaction_id
     GROUP BY e.epoch_start
     ORDER BY e.epoch_start DESC
     LIMIT ${limit}`.execute(db);
  return rows;
}

/**
 * The sums (as text, base units of each currency) of account `accountId`'s `earned` legs by
 * currency, split by their movement's outbox status: settled (confirmed or finalized) and pending
 * (signed or sent). Failed rows count in neither.
 */
export async function earnedLegTotals(
  db: Db,
  accountId: string,
): Promise<Array<{ currency: 'usdc' | 'native'; settled: string; pending: string }>> {
  const { rows } = await sql<{ currency: 'usdc' | 'native'; settled: string; pending: string }>`
    SELECT la.currency,
           coalesce(sum(l.amount) FILTER (WHERE ct.status IN ('confirmed', 'finalized')), 0)::text AS settled,
           coalesce(sum(l.amount) FILTER (WHERE ct.status IN ('signed', 'sent')), 0)::text AS pending
      FROM ledger_accounts la
      JOIN ledger_legs l ON l.ledger_account_id = la.id
      JOIN chain_transactions ct ON ct.movement_id = l.movement_id
     WHERE la.account_id = ${accountId}::uuid AND l.counts = 'earned'
     GROUP BY la.currency`.execute(db);
  return rows;
}

/**
 * Account `accountId`'s payouts in the epochs starting at `epochStarts` (one row per epoch it was
 * paid in; none for the others): its tokens and score (native base units and points, as text),
 * the sum of every author's score in that epoch, and its batch's chain transaction (current
 * signature and outbox state). By index: creator_fund_payouts_by_account (account_id,
 * epoch_start) for the account's rows, the primary key (epoch_start, account_id) for each epoch's
 * score total, and the batch and outbox rows by their keys.
 */
export async function fundShareRows(db: Db, accountId: string, epochStarts: readonly Date[]) {
  if (epochStarts.length === 0) return [];
  const { rows } = await sql<{
    epoch_start: Date;
    amount: string;
    score: string;
    epoch_score: string;
    batch_index: number;
    signature: string;
    status: OutboxStatus;
  }>`
    SELECT p.epoch_start, p.amount::text AS amount, p.score::text AS score,
           (SELECT sum(o.score) FROM creator_fund_payouts o WHERE o.epoch_start = p.epoch_start)::text AS epoch_score,
           p.batch_index, ct.signature, ct.status
      FROM creator_fund_payouts p
      JOIN creator_fund_batches b ON b.epoch_start = p.epoch_start AND b.batch_index = p.batch_index
      JOIN chain_transactions ct ON ct.id = b.chain_transaction_id
     WHERE p.account_id = ${accountId}::uuid
       AND p.epoch_start = ANY(${epochStarts.map((start) => start.toISOString())}::timestamptz[])`.execute(
    db,
  );
  return rows;
}
