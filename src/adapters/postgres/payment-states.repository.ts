import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * What finance reads of the outbox (chain_transactions) itself: how many payments of each day are
 * in each state now, and the payments still not finalized some time after they were signed. A
 * payment's day is the UTC day of its outbox row's `created_at`, which is its ledger day too: the
 * movement and its outbox row are written by one statement (one transaction, one `now()`).
 */

export interface PaymentStateCountRow {
  /** YYYY-MM-DD (UTC). */
  day: string;
  /** `signed` or `sent`: not yet seen confirmed (or seen vanished and being sent again). */
  pending: number;
  confirmed: number;
  finalized: number;
  /** Landed with an error; its ledger movement was reversed. */
  failed: number;
  /** Of pending and confirmed, those signed `notFinalizedAfterMs` ago or longer. */
  not_finalized: number;
}

/**
 * Counts per day from..to (inclusive, UTC) by outbox status, days without payments left out.
 *
 * Cost: no index orders the outbox by `created_at` across every status (the partial indexes
 * `chain_transactions_unfinished`, `_confirmed` and `_to_reconcile` hold only rows still in
 * flight), so this is one sequential scan of chain_transactions per call, whatever the range.
 * Measured (EXPLAIN ANALYZE, 2 busy cores): 300,000 outbox rows (221 MB with their signed bytes),
 * one day of 10,000 asked for, 0.29-0.34 s, about 1 ms per 1,000 rows in the table: fine for a
 * finance report today, not at millions of payments. An index `(created_at) INCLUDE (status)` made
 * the same count an index-only scan of the day's rows, 14 ms; this query needs no change to use
 * it (it is not in schema/postgres yet).
 */
export async function paymentStateCountsByDay(
  db: Db,
  range: { from: string; to: string; notFinalizedAfterMs: number },
): Promise<PaymentStateCountRow[]> {
  const { rows } = await sql<PaymentStateCountRow>`
    SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
           (count(*) FILTER (WHERE status IN ('signed', 'sent')))::int AS pending,
           (count(*) FILTER (WHERE status = 'confirmed'))::int AS confirmed,
           (count(*) FILTER (WHERE status = 'finalized'))::int AS finalized,
           (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
           (count(*) FILTER (WHERE status IN ('signed', 'sent', 'confirmed')
                               AND created_at < ${notFinalizedCutoff(range.notFinalizedAfterMs)}))::int
             AS not_finalized
      FROM chain_transactions
     WHERE created_at >= ${range.from}::date::timestamp AT TIME ZONE 'UTC'
       AND created_at < (${range.to}::date + 1)::timestamp AT TIME ZONE 'UTC'
     GROUP BY 1
     ORDER BY 1`.execute(db);
  return rows;
}

export interface UnfinalizedPaymentRow {
  movement_id: string;
  signature: string;
  status: 'signed' | 'sent' | 'confirmed';
  /** YYYY-MM-DD (UTC) of signing. */
  day: string;
  /**
   * Micro-USD the ledger moved, as the reconciler counts it: the positive net USDC change of each
   * party with a wallet (users, treasury, creator fund, swap pool), summed.
   */
  ledger_amount: bigint;
  /** Seconds since it was signed. */
  age_seconds: number;
  /** Postgres's `now()`, as ClickHouse prints a DateTime64(3, 'UTC'): the time of this look. */
  checked_at: string;
}

/**
 * Payments signed `notFinalizedAfterMs` ago or longer whose outbox row is still `signed`, `sent`
 * or `confirmed`, newest day first, then by movement id and signature descending (keyset-paged).
 * `below` continues a page: with a movement id, after that row; with a day alone, from the day
 * before it.
 *
 * Read through the two partial indexes that hold exactly the rows in flight (one arm each, as a
 * single `status IN (...)` would match neither): `chain_transactions_unfinished` (created_at,
 * signed or sent) and `chain_transactions_confirmed` (every confirmed row, a few seconds' worth
 * while the finality follower keeps up). The set is small unless payments are stuck, which is what
 * this list is for; the page is sorted from it and only the page's ledger amounts are summed.
 */
export async function unfinalizedPayments(
  db: Db,
  options: {
    notFinalizedAfterMs: number;
    day?: string | undefined;
    below?: { day: string; movementId?: string; signature?: string } | undefined;
    limit: number;
  },
): Promise<UnfinalizedPaymentRow[]> {
  const cutoff = notFinalizedCutoff(options.notFinalizedAfterMs);
  const day = sql`(o.created_at AT TIME ZONE 'UTC')::date`;
  const below = options.below;
  const { rows } = await sql<UnfinalizedPaymentRow>`
    WITH open AS (
      SELECT movement_id, signature, status, created_at FROM chain_transactions
       WHERE status IN ('signed', 'sent') AND created_at < ${cutoff}
      UNION ALL
      SELECT movement_id, signature, status, created_at FROM chain_transactions
       WHERE status = 'confirmed' AND created_at < ${cutoff}),
    page AS (
      SELECT o.movement_id, o.signature, o.status, o.created_at, ${day} AS day FROM open o
       WHERE ${options.day === undefined ? sql`true` : sql`${day} = ${options.day}::date`}
         AND ${
           below === undefined
             ? sql`true`
             : below.movementId === undefined
               ? sql`${day} < ${below.day}::date`
               : sql`(${day}, o.movement_id, o.signature)
                       < (${below.day}::date, ${below.movementId}::uuid, ${below.signature ?? ''}::text)`
         }
       ORDER BY day DESC, o.movement_id DESC, o.signature DESC
       LIMIT ${options.limit})
    SELECT page.movement_id, page.signature, page.status, to_char(page.day, 'YYYY-MM-DD') AS day,
           coalesce((SELECT sum(net) FILTER (WHERE net > 0)
                       FROM (SELECT sum(l.amount) AS net
                               FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
                              WHERE l.movement_id = page.movement_id AND a.currency = 'usdc'
                                AND a.kind NOT IN ('fee_pool', 'external')
                              GROUP BY l.ledger_account_id) AS nets), 0)::bigint AS ledger_amount,
           extract(epoch FROM now() - page.created_at)::float8 AS age_seconds,
           to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS checked_at
      FROM page
     ORDER BY page.day DESC, page.movement_id DESC, page.signature DESC`.execute(db);
  return rows;
}

/** `now()` less the given milliseconds: Postgres's clock, the one `created_at` was written by. */
function notFinalizedCutoff(ms: number) {
  return sql<Date>`now() - make_interval(secs => ${ms / 1000})`;
}
