import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Database } from '../../adapters/postgres/database.js';
import type { Db } from '../../adapters/postgres/db.js';

export interface ShipperDeps {
  db: Db;
  clickhouse: ClickHouse;
}

export interface ShippedBatch {
  events: number;
  legs: number;
}

/**
 * Rows per ClickHouse insert. chdb runs an insert on this thread, so smaller batches overlap
 * better with Postgres formatting the next one: 10,000 shipped fastest here (measured 5,000 /
 * 10,000 / 20,000 / 50,000: 64k / 88-96k / 58-80k / 44-70k events/s).
 */
export const SHIP_BATCH_ROWS = 10_000;
/** Batches per stream in one shipping transaction (the cursor moves once, at its end). */
export const SHIP_BATCHES_PER_ROUND = 20;

export type ShipStream = 'events' | 'legs';

/**
 * Ships what waits of domain events and of ledger legs from Postgres to ClickHouse, up to
 * `maxBatches` batches of `limit` rows per stream.
 *
 * Each stream is read in commit order through a cursor (shipper_cursors): rows after the cursor
 * in (txid, seq) order whose writing transaction is older than every transaction still running
 * (`pg_snapshot_xmin`), so a transaction that commits late holds shipping back instead of being
 * skipped. The batches go to ClickHouse, then the cursor moves, in one Postgres transaction holding
 * the stream's advisory lock (one shipper per stream at a time). While ClickHouse takes a batch,
 * the next one is read from Postgres: the two costs overlap. ClickHouse down: the insert fails,
 * the cursor stays, the rows wait. Inserted but the cursor not moved (a crash): the batches ship
 * again and collapse there (ReplacingMergeTrees keyed by event id and leg id, also the
 * materialized views' targets). Nothing is lost, nothing counts twice.
 */
export async function shipBatch(
  deps: ShipperDeps,
  limit = SHIP_BATCH_ROWS,
  maxBatches = SHIP_BATCHES_PER_ROUND,
): Promise<ShippedBatch> {
  const events = await shipStream(deps, 'events', limit, maxBatches);
  const legs = await shipStream(deps, 'legs', limit, maxBatches);
  return { events, legs };
}

interface Shipped {
  /** The batch as TabSeparated lines, written by Postgres: no JavaScript object per row. */
  body: string;
  count: number;
  /** The (txid, seq) of the batch's last row. */
  last: Cursor | undefined;
}

/** ClickHouse columns of each stream's TabSeparated lines, in the order Postgres writes them. */
const COLUMNS: Record<ShipStream, readonly string[]> = {
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
  ],
};

async function shipStream(
  deps: ShipperDeps,
  stream: ShipStream,
  limit: number,
  maxBatches: number,
): Promise<number> {
  return deps.db.transaction().execute(async (trx) => {
    // An advisory lock, not a row lock: it takes no transaction id, so this transaction does not
    // hold the snapshot's xmin back while it reads (the cursor UPDATE comes last).
    const { rows: locked } = await sql<{ ok: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtext(${`ledgerfeed:shipper:${stream}`})) AS ok`.execute(trx);
    if (!locked[0]?.ok) return 0; // another shipper has this stream right now
    let cursor: Cursor = await trx
      .selectFrom('shipper_cursors')
      .select(['last_txid', 'last_seq'])
      .where('stream', '=', stream)
      .executeTakeFirstOrThrow();
    const table = stream === 'events' ? 'domain_events' : 'ledger_legs';
    const read = (from: Cursor) =>
      stream === 'events' ? nextEvents(trx, from, limit) : nextLegs(trx, from, limit);
    let shipped = 0;
    let batch = await read(cursor);
    for (let k = 0; batch.last && k < maxBatches; k++) {
      const last = batch.last;
      const more = batch.count === limit && k + 1 < maxBatches;
      const [, next] = await Promise.all([
        deps.clickhouse.insertTabSeparated(table, COLUMNS[stream], batch.body),
        more ? read(last) : Promise.resolve<Shipped>({ body: '', count: 0, last: undefined }),
      ]);
      shipped += batch.count;
      cursor = last;
      batch = next;
    }
    if (shipped > 0) {
      await sql`
        UPDATE shipper_cursors
           SET last_txid = ${cursor.last_txid}::xid8, last_seq = ${cursor.last_seq}::bigint, updated_at = now()
         WHERE stream = ${stream}`.execute(trx);
    }
    return shipped;
  });
}

type Cursor = { last_txid: string; last_seq: string };

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
async function nextBatch(trx: Transaction<Database>, batch: RawBuilder<unknown>, line: RawBuilder<unknown>) {
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

function nextEvents(trx: Transaction<Database>, cursor: Cursor, limit: number): Promise<Shipped> {
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

function nextLegs(trx: Transaction<Database>, cursor: Cursor, limit: number): Promise<Shipped> {
  return nextBatch(
    trx,
    sql`SELECT l.id, l.movement_id, m.kind AS movement_kind, a.kind AS account_kind, a.account_id,
               l.amount, l.counts, m.created_at, a.currency, l.txid, l.id AS seq
          FROM ledger_legs l
          JOIN ledger_movements m ON m.id = l.movement_id
          JOIN ledger_accounts a ON a.id = l.ledger_account_id
         WHERE (l.txid, l.id) > (${cursor.last_txid}::xid8, ${cursor.last_seq}::bigint)
           AND l.txid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY l.txid, l.id
         LIMIT ${limit}`,
    sql`concat_ws(E'\t', id::text, movement_id::text, movement_kind, account_kind,
                  coalesce(account_id::text, '\\N'), amount::text, counts, ${chTime(sql`created_at`)},
                  currency)`,
  );
}

/** Seconds since the oldest row not yet shipped was written, per stream (0 when none waits). */
export async function shipperLag(db: Db): Promise<{ events: number; legs: number }> {
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

/** Ship everything again from the start (`reindex`): the ClickHouse tables collapse repeats. */
export async function rewindShipper(db: Db): Promise<void> {
  await sql`UPDATE shipper_cursors SET last_txid = '0'::xid8, last_seq = 0, updated_at = now()`.execute(db);
}

/** How many rows wait behind each stream's cursor (a progress bar's total). */
export async function unshippedCounts(db: Db): Promise<{ events: number; legs: number }> {
  const { rows } = await sql<{ events: string; legs: string }>`
    WITH c AS (SELECT stream, last_txid, last_seq FROM shipper_cursors)
    SELECT
      (SELECT count(*) FROM domain_events e, c
        WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq))::text AS events,
      (SELECT count(*) FROM ledger_legs l, c
        WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq))::text AS legs`.execute(db);
  return { events: Number(rows[0]?.events ?? 0), legs: Number(rows[0]?.legs ?? 0) };
}

/** ClickHouse's DateTime64(3) text form, in UTC: 'YYYY-MM-DD hh:mm:ss.sss'. */
export function clickhouseTime(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}
