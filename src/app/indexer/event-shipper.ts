import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  countUnshipped,
  moveShipperCursor,
  nextStreamBatch,
  readShipperCursor,
  rewindShipperCursors,
  SHIPPED_COLUMNS,
  streamsWaiting,
  unshippedAgeSeconds,
  withShippingLock,
  type ShipperCursor,
  type ShipStream,
  type StreamBatch,
} from '../../adapters/postgres/event-shipping.repository.js';

export type { ShipStream } from '../../adapters/postgres/event-shipping.repository.js';

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
  // The worker ships a round a second, and idle finds nothing: one statement says so, instead of
  // a transaction per stream (BEGIN, the lock, the cursor, the read, COMMIT).
  const waiting = await streamsWaiting(deps.db);
  const events = waiting.events ? await shipStream(deps, 'events', limit, maxBatches) : 0;
  const legs = waiting.legs ? await shipStream(deps, 'legs', limit, maxBatches) : 0;
  return { events, legs };
}

async function shipStream(
  deps: ShipperDeps,
  stream: ShipStream,
  limit: number,
  maxBatches: number,
): Promise<number> {
  const moved = await withShippingLock(deps.db, stream, async (tx) => {
    let cursor = await readShipperCursor(tx, stream);
    const table = stream === 'events' ? 'domain_events' : 'ledger_legs';
    const read = (from: ShipperCursor) => nextStreamBatch(tx, stream, from, limit);
    let shipped = 0;
    let batch = await read(cursor);
    for (let k = 0; batch.last && k < maxBatches; k++) {
      const last = batch.last;
      const more = batch.count === limit && k + 1 < maxBatches;
      const [, next] = await Promise.all([
        deps.clickhouse.insertTabSeparated(table, SHIPPED_COLUMNS[stream], batch.body),
        more ? read(last) : Promise.resolve<StreamBatch>({ body: '', count: 0, last: undefined }),
      ]);
      shipped += batch.count;
      cursor = last;
      batch = next;
    }
    if (shipped > 0) await moveShipperCursor(tx, stream, cursor);
    return shipped;
  });
  return moved ?? 0; // undefined: another shipper has this stream right now
}

/** Seconds since the oldest row not yet shipped was written, per stream (0 when none waits). */
export function shipperLag(db: Db): Promise<{ events: number; legs: number }> {
  return unshippedAgeSeconds(db);
}

/** Ship everything again from the start (`reindex`): the ClickHouse tables collapse repeats. */
export function rewindShipper(db: Db): Promise<void> {
  return rewindShipperCursors(db);
}

/** How many rows wait behind each stream's cursor (a progress bar's total). */
export function unshippedCounts(db: Db): Promise<{ events: number; legs: number }> {
  return countUnshipped(db);
}

/** ClickHouse's DateTime64(3) text form, in UTC: 'YYYY-MM-DD hh:mm:ss.sss'. */
export function clickhouseTime(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}
