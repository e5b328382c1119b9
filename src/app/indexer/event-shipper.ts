import { sql, type Transaction } from 'kysely';
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

/** Rows per ClickHouse insert: large enough to amortise, small enough not to stall the loop. */
export const SHIP_BATCH_ROWS = 20_000;

export type ShipStream = 'events' | 'legs';

/**
 * Ships one batch of domain events and one of ledger legs from Postgres to ClickHouse.
 *
 * Each stream is read in commit order through a cursor (shipper_cursors): rows after the cursor
 * in (txid, seq) order whose writing transaction is older than every transaction still running
 * (`pg_snapshot_xmin`), so a transaction that commits late holds shipping back instead of being
 * skipped. The batch is inserted into ClickHouse, then the cursor moves, in one Postgres
 * transaction holding the stream's advisory lock (one shipper per stream at a time). ClickHouse
 * down: the insert fails, the cursor stays, the rows wait. Inserted but the cursor not moved (a
 * crash): the batch ships again and collapses there (ReplacingMergeTrees keyed by event id and leg
 * id, also the materialized views' targets). Nothing is lost, nothing counts twice.
 */
export async function shipBatch(deps: ShipperDeps, limit = SHIP_BATCH_ROWS): Promise<ShippedBatch> {
  const events = await shipStream(deps, 'events', limit);
  const legs = await shipStream(deps, 'legs', limit);
  return { events, legs };
}

interface Shipped {
  rows: Array<Record<string, unknown>>;
  /** The (txid, seq) of the batch's last row. */
  last: { txid: string; seq: string } | undefined;
}

async function shipStream(deps: ShipperDeps, stream: ShipStream, limit: number): Promise<number> {
  return deps.db.transaction().execute(async (trx) => {
    // An advisory lock, not a row lock: it takes no transaction id, so this transaction does not
    // hold the snapshot's xmin back while it reads.
    const { rows: locked } = await sql<{ ok: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtext(${`ledgerfeed:shipper:${stream}`})) AS ok`.execute(trx);
    if (!locked[0]?.ok) return 0; // another shipper has this stream right now
    const cursor = await trx
      .selectFrom('shipper_cursors')
      .select(['last_txid', 'last_seq'])
      .where('stream', '=', stream)
      .executeTakeFirstOrThrow();
    const batch =
      stream === 'events' ? await nextEvents(trx, cursor, limit) : await nextLegs(trx, cursor, limit);
    if (!batch.last) return 0;
    await deps.clickhouse.insertRows(stream === 'events' ? 'domain_events' : 'ledger_legs', batch.rows);
    await sql`
      UPDATE shipper_cursors
         SET last_txid = ${batch.last.txid}::xid8, last_seq = ${batch.last.seq}::bigint, updated_at = now()
       WHERE stream = ${stream}`.execute(trx);
    return batch.rows.length;
  });
}

type Cursor = { last_txid: string; last_seq: string };

async function nextEvents(trx: Transaction<Database>, cursor: Cursor, limit: number): Promise<Shipped> {
  const { rows } = await sql<{
    id: string;
    type: string;
    actor_id: string | null;
    post_id: string | null;
    amount_micro: bigint;
    payload: unknown;
    occurred_at: Date;
    txid_text: string;
    seq_text: string;
  }>`
    SELECT e.id, e.type, e.actor_id, e.post_id, e.amount_micro, e.payload, e.occurred_at,
           e.txid::text AS txid_text, e.seq::text AS seq_text
      FROM domain_events e
     WHERE (e.txid, e.seq) > (${cursor.last_txid}::xid8, ${cursor.last_seq}::bigint)
       AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY e.txid, e.seq
     LIMIT ${limit}`.execute(trx);
  const last = rows.at(-1);
  return {
    // Text aliases of their own: ORDER BY a name would sort by an output column of that name.
    last: last && { txid: last.txid_text, seq: last.seq_text },
    rows: rows.map((row) => ({
      event_id: row.id,
      type: row.type,
      occurred_at: clickhouseTime(row.occurred_at),
      actor_id: row.actor_id,
      post_id: row.post_id,
      amount_micro: row.amount_micro.toString(),
      payload: JSON.stringify(row.payload ?? {}),
    })),
  };
}

async function nextLegs(trx: Transaction<Database>, cursor: Cursor, limit: number): Promise<Shipped> {
  const { rows } = await sql<{
    id: string;
    movement_id: string;
    movement_kind: string;
    account_kind: string;
    account_id: string | null;
    amount: bigint;
    counts: string;
    created_at: Date;
    txid_text: string;
  }>`
    SELECT l.id::text AS id, l.movement_id, m.kind AS movement_kind, a.kind AS account_kind,
           a.account_id, l.amount, l.counts, m.created_at, l.txid::text AS txid_text
      FROM ledger_legs l
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
     WHERE (l.txid, l.id) > (${cursor.last_txid}::xid8, ${cursor.last_seq}::bigint)
       AND l.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY l.txid, l.id
     LIMIT ${limit}`.execute(trx);
  const last = rows.at(-1);
  return {
    last: last && { txid: last.txid_text, seq: last.id },
    rows: rows.map((row) => ({
      leg_id: row.id,
      movement_id: row.movement_id,
      movement_kind: row.movement_kind,
      account_kind: row.account_kind,
      account_id: row.account_id,
      amount: row.amount.toString(),
      counts: row.counts,
      created_at: clickhouseTime(row.created_at),
    })),
  };
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
