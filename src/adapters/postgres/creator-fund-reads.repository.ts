import { sql } from 'kysely';
import type { Db } from './db.js';

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
