import { sql, type RawBuilder } from 'kysely';
import { historyTypeSql } from '../../domain/reports/history-types.js';
import type { Db } from './db.js';
import type { Tx } from './tx.js';

/** A stream shipped to ClickHouse: domain events, or ledger legs. */
export type ShipStream = 'events' | 'legs';

/** A position in a stream's commit order: the (txid, seq) of the last row shipped, as text. */
export interface ShipperCursor {
  last_txid: string;
  last_seq: string;
}

export interface StreamBatch {
  /** The batch as TabSeparated lines, written by Postgres: no JavaScript object per row. */
  body: string;
  count: number;
  /** The (txid, seq) of the batch's last row. */
  last: ShipperCursor | undefined;
}

/** ClickHouse columns of each stream's TabSeparated lines, in the order Postgres writes them. */
export const SHIPPED_COLUMNS: Record<ShipStream, readonly string[]> = {
  events: ['event_id', 'type', 'occurred_at', 'actor_id', 'post_id', 'amount_micro', 'payload'],
  legs: [
    'leg_id',
    'movement_id',
    'movement_kind',
    'account_kind',
    'account_id',
    'amount',
    'counts',
    'created_at',
    // Since schema/clickhouse/0003: 'usdc' (micro-USD) or 'native' (token base units).
    'currency',
    // Since schema/clickhouse/0004: what the report runs print of a leg.
    'history_type',
    'swap_tx',
    'related_post_id',
    'counterparty_id',
    // Since schema/clickhouse/0005: the paid engagement a leg belongs to (creator analytics).
    'engagement',
    'engaged_post_id',
    'payer_id',
  ],
};

/**
 * Runs `work` in one Postgres transaction holding the stream's advisory lock (one shipper per
 * stream at a time), so the batches read and the cursor moved commit together. Answers undefined,
 * without calling `work`, when another shipper has the stream right now.
 */
export async function withShippingLock<T>(
  db: Db,
  stream: ShipStream,
  work: (tx: Tx) => Promise<T>,
): Promise<T | undefined> {
  return db.transaction().execute(async (trx) => {
    // An advisory lock, not a row lock: it takes no transaction id, so this transaction does not
    // hold the snapshot's xmin back while it reads (the cursor UPDATE comes last).
    const { rows: locked } = await sql<{ ok: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtext(${`ledgerfeed:shipper:${stream}`})) AS ok`.execute(trx);
    if (!locked[0]?.ok) return undefined;
    return work(trx);
  });
}

/** Where the stream's shipping stopped. */
export async function readShipperCursor(tx: Tx, stream: ShipStream): Promise<ShipperCursor> {
  return tx
    .selectFrom('shipper_cursors')
    .select(['last_txid', 'last_seq'])
    .where('stream', '=', stream)
    .executeTakeFirstOrThrow();
}

/** Moves the stream's cursor to the last row shipped; last in the transaction (see withShippingLock). */
export async function moveShipperCursor(tx: Tx, stream: ShipStream, cursor: ShipperCursor): Promise<void> {
  await sql`
    UPDATE shipper_cursors
       SET last_txid = ${cursor.last_txid}::xid8, last_seq = ${cursor.last_seq}::bigint, updated_at = now()
     WHERE stream = ${stream}`.execute(tx);
}

/**
 * The next batch of up to `limit` rows of a stream after the cursor, in (txid, seq) order, taking
 * only rows whose writing transaction is older than every transaction still running
 * (`pg_snapshot_xmin`): a transaction that commits late holds shipping back instead of being skipped.
 */
export function nextStreamBatch(
  tx: Tx,
  stream: ShipStream,
  cursor: ShipperCursor,
  limit: number,
): Promise<StreamBatch> {
  return stream === 'events' ? nextEvents(tx, cursor, limit) : nextLegs(tx, cursor, limit);
}

/** TabSeparated escaping of a text value (backslash, tab, newline), in SQL. */
const tsv = (expression: RawBuilder<unknown>) =>
  sql`replace(replace(replace(${expression}, '\\', '\\\\'), E'\t', '\\t'), E'\n', '\\n')`;
/** ClickHouse's DateTime64(3) text of a timestamptz, in UTC. */
const chTime = (expression: RawBuilder<unknown>) =>
  sql`to_char(${expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')`;

/**
 * The next batch of a stream after the cursor, as one text of TabSeparated lines plus the batch's
 * size and last position: Postgres formats the rows (in its own process) and Node only passes
 * the text on, which is what makes shipping fast.
 */
async function nextBatch(
  trx: Tx,
  batch: RawBuilder<unknown>,
  line: RawBuilder<unknown>,
): Promise<StreamBatch> {
  const { rows } = await sql<{
    n: string;
    body: string | null;
    last_txid: string | null;
    last_seq: string | null;
  }>`
    WITH batch AS MATERIALIZED (${batch}),
         last AS (SELECT txid, seq FROM batch ORDER BY txid DESC, seq DESC LIMIT 1)
    SELECT count(*)::text AS n,
           -- Line order within a batch does not matter to ClickHouse: no sort here.
           string_agg(${line}, E'\n') || E'\n' AS body,
           (SELECT txid::text FROM last) AS last_txid,
           (SELECT seq::text FROM last) AS last_seq
      FROM batch`.execute(trx);
  const row = rows[0];
  const count = Number(row?.n ?? 0);
  return {
    count,
    body: count > 0 ? (row?.body ?? '') : '',
    last:
      count > 0 && row?.last_txid && row.last_seq
        ? { last_txid: row.last_txid, last_seq: row.last_seq }
        : undefined,
  };
}

function nextEvents(trx: Tx, cursor: ShipperCursor, limit: number): Promise<StreamBatch> {
  return nextBatch(
    trx,
    sql`SELECT e.id, e.type, e.occurred_at, e.actor_id, e.post_id, e.amount_micro, e.payload, e.txid, e.seq
          FROM domain_events e
         WHERE (e.txid, e.seq) > (${cursor.last_txid}::xid8, ${cursor.last_seq}::bigint)
           AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY e.txid, e.seq
         LIMIT ${limit}`,
    sql`concat_ws(E'\t', id::text, ${tsv(sql`type`)}, ${chTime(sql`occurred_at`)},
                  coalesce(actor_id::text, '\\N'), coalesce(post_id::text, '\\N'), amount_micro::text,
                  ${tsv(sql`payload::text`)})`,
  );
}

/** A leg's history type, from the history's one definition (see historyTypeSql). */
const HISTORY_TYPE_SQL = sql.raw(historyTypeSql('m.kind', 'l.amount'));

/**
 * Legs with what the reports print of them (schema/clickhouse/0004): the history type, the
 * movement's chain signature (a reversal: its reversed movement's; a deposit: its transfer's), the
 * post it paid for (a repost: the reposted post) and a send's other party from the leg's account's
 * side. And the paid engagement the movement (a reversal: the reversed one) was
 * (schema/clickhouse/0005): 'reply', 'quote' or 'repost' ('' otherwise), the post engaged with
 * (a reply's parent, the quoted post, the reposted post: not the new post) and who paid for it.
 * Each look-up is by movement id (unique or indexed on every table joined).
 */
function nextLegs(trx: Tx, cursor: ShipperCursor, limit: number): Promise<StreamBatch> {
  return nextBatch(
    trx,
    sql`SELECT l.id, l.movement_id, m.kind AS movement_kind, a.kind AS account_kind, a.account_id,
               l.amount, l.counts, m.created_at, a.currency, l.txid, l.id AS seq,
               ${HISTORY_TYPE_SQL} AS history_type,
               coalesce(ct.signature, dt.signature,
                        CASE WHEN coalesce(r.idempotency_key, m.idempotency_key) LIKE 'deposit:%'
                             THEN substr(coalesce(r.idempotency_key, m.idempotency_key), 9) END, '') AS swap_tx,
               coalesce(p.id, rp.post_id) AS related_post_id,
               CASE WHEN a.account_id = s.sender_id THEN s.recipient_id
                    WHEN a.account_id = s.recipient_id THEN s.sender_id END AS counterparty_id,
               CASE WHEN rp.id IS NOT NULL THEN 'repost'
                    WHEN p.type IN ('reply', 'quote') THEN p.type ELSE '' END AS engagement,
               coalesce(p.parent_id, p.quoted_post_id, rp.post_id) AS engaged_post_id,
               CASE WHEN rp.id IS NOT NULL THEN rp.reposter_id
                    WHEN p.type IN ('reply', 'quote') THEN p.author_id END AS payer_id
          FROM ledger_legs l
          JOIN ledger_movements m ON m.id = l.movement_id
          JOIN ledger_accounts a ON a.id = l.ledger_account_id
          LEFT JOIN ledger_movements r ON r.id = m.reverses_id
          LEFT JOIN chain_transactions ct ON ct.movement_id = coalesce(m.reverses_id, m.id)
          LEFT JOIN deposit_transactions dt ON dt.movement_id = coalesce(m.reverses_id, m.id)
          LEFT JOIN posts p ON p.movement_id = coalesce(m.reverses_id, m.id)
          LEFT JOIN reposts rp ON rp.movement_id = coalesce(m.reverses_id, m.id)
          LEFT JOIN sends s ON s.movement_id = coalesce(m.reverses_id, m.id)
         WHERE (l.txid, l.id) > (${cursor.last_txid}::xid8, ${cursor.last_seq}::bigint)
           AND l.txid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY l.txid, l.id
         LIMIT ${limit}`,
    sql`concat_ws(E'\t', id::text, movement_id::text, movement_kind, account_kind,
                  coalesce(account_id::text, '\\N'), amount::text, counts, ${chTime(sql`created_at`)},
                  currency, history_type, ${tsv(sql`swap_tx`)}, coalesce(related_post_id::text, '\\N'),
                  coalesce(counterparty_id::text, '\\N'), engagement,
                  coalesce(engaged_post_id::text, '\\N'), coalesce(payer_id::text, '\\N'))`,
  );
}

/**
 * Which streams hold rows after their cursor (committed or not yet): one statement, what an idle
 * round needs to learn that there is nothing to ship.
 */
export async function streamsWaiting(db: Db): Promise<Record<ShipStream, boolean>> {
  const { rows } = await sql<{ events: boolean; legs: boolean }>`
    WITH c AS (SELECT stream, last_txid, last_seq FROM shipper_cursors)
    SELECT
      EXISTS (SELECT 1 FROM domain_events e, c
               WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq)) AS events,
      EXISTS (SELECT 1 FROM ledger_legs l, c
               WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq)) AS legs`.execute(db);
  return { events: rows[0]?.events ?? true, legs: rows[0]?.legs ?? true };
}

/** Seconds since the oldest row not yet shipped was written, per stream (0 when none waits). */
export async function unshippedAgeSeconds(db: Db): Promise<{ events: number; legs: number }> {
  const { rows } = await sql<{ events: number | null; legs: number | null }>`
    WITH c AS (SELECT stream, last_txid, last_seq FROM shipper_cursors)
    SELECT
      (SELECT extract(epoch FROM now() - min(e.occurred_at))::float8 FROM domain_events e, c
        WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq)) AS events,
      (SELECT extract(epoch FROM now() - min(m.created_at))::float8
         FROM ledger_legs l JOIN ledger_movements m ON m.id = l.movement_id, c
        WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq)) AS legs`.execute(db);
  return { events: rows[0]?.events ?? 0, legs: rows[0]?.legs ?? 0 };
}

/** Moves every stream's cursor back to the start. */
export async function rewindShipperCursors(db: Db): Promise<void> {
  await sql`UPDATE shipper_cursors SET last_txid = '0'::xid8, last_seq = 0, updated_at = now()`.execute(db);
}

/** How many rows wait behind each stream's cursor. */
export async function countUnshipped(db: Db): Promise<{ events: number; legs: number }> {
  const { rows } = await sql<{ events: string; legs: string }>`
    WITH c AS (SELECT stream, last_txid, last_seq FROM shipper_cursors)
    SELECT
      (SELECT count(*) FROM domain_events e, c
        WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq))::text AS events,
      (SELECT count(*) FROM ledger_legs l, c
        WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq))::text AS legs`.execute(db);
  return { events: Number(rows[0]?.events ?? 0), legs: Number(rows[0]?.legs ?? 0) };
}
