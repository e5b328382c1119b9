import { sql } from 'kysely';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
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
export const SHIP_BATCH_ROWS = 5_000;

/**
 * Ships one batch of domain events and one of ledger legs from Postgres to ClickHouse. Each batch
 * is selected FOR UPDATE SKIP LOCKED (several shippers never take the same rows), inserted into
 * ClickHouse, and marked shipped in the same Postgres transaction: if the insert fails (ClickHouse
 * down) nothing is marked and the rows wait; if the insert landed but the mark did not commit, the
 * rows are shipped again and collapse there (the tables are ReplacingMergeTrees keyed by event id
 * and leg id, and so are the materialized views' targets): nothing is lost, nothing counts twice.
 */
export async function shipBatch(deps: ShipperDeps, limit = SHIP_BATCH_ROWS): Promise<ShippedBatch> {
  const events = await deps.db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('domain_events')
      .select(['id', 'type', 'actor_id', 'post_id', 'amount_micro', 'payload', 'occurred_at'])
      .where('shipped_at', 'is', null)
      .orderBy('occurred_at')
      .limit(limit)
      .forUpdate()
      .skipLocked()
      .execute();
    if (rows.length === 0) return 0;
    await deps.clickhouse.insertRows(
      'domain_events',
      rows.map((row) => ({
        event_id: row.id,
        type: row.type,
        occurred_at: clickhouseTime(row.occurred_at),
        actor_id: row.actor_id,
        post_id: row.post_id,
        amount_micro: row.amount_micro.toString(),
        payload: JSON.stringify(row.payload ?? {}),
      })),
    );
    await trx
      .updateTable('domain_events')
      .set({ shipped_at: new Date() })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .execute();
    return rows.length;
  });

  const legs = await deps.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{
      id: string;
      movement_id: string;
      movement_kind: string;
      account_kind: string;
      account_id: string | null;
      amount: bigint;
      counts: string;
      created_at: Date;
    }>`
      SELECT l.id::text AS id, l.movement_id, m.kind AS movement_kind, a.kind AS account_kind,
             a.account_id, l.amount, l.counts, m.created_at
        FROM ledger_legs l
        JOIN ledger_movements m ON m.id = l.movement_id
        JOIN ledger_accounts a ON a.id = l.ledger_account_id
       WHERE l.shipped_at IS NULL
       ORDER BY l.id
       LIMIT ${limit}
         FOR UPDATE OF l SKIP LOCKED`.execute(trx);
    if (rows.length === 0) return 0;
    await deps.clickhouse.insertRows(
      'ledger_legs',
      rows.map((row) => ({
        leg_id: row.id,
        movement_id: row.movement_id,
        movement_kind: row.movement_kind,
        account_kind: row.account_kind,
        account_id: row.account_id,
        amount: row.amount.toString(),
        counts: row.counts,
        created_at: clickhouseTime(row.created_at),
      })),
    );
    await sql`UPDATE ledger_legs SET shipped_at = now() WHERE id = ANY(${rows.map((r) => r.id)}::bigint[])`.execute(
      trx,
    );
    return rows.length;
  });
  return { events, legs };
}

/** Seconds since the oldest unshipped row of each stream was written (0 when none waits). */
export async function shipperLag(db: Db): Promise<{ events: number; legs: number }> {
  const { rows } = await sql<{ events: number | null; legs: number | null }>`
    SELECT
      (SELECT extract(epoch FROM now() - min(occurred_at))::float8 FROM domain_events WHERE shipped_at IS NULL) AS events,
      (SELECT extract(epoch FROM now() - min(m.created_at))::float8
         FROM ledger_legs l JOIN ledger_movements m ON m.id = l.movement_id WHERE l.shipped_at IS NULL) AS legs`.execute(
    db,
  );
  return { events: rows[0]?.events ?? 0, legs: rows[0]?.legs ?? 0 };
}

/** ClickHouse's DateTime64(3) text form, in UTC: 'YYYY-MM-DD hh:mm:ss.sss'. */
export function clickhouseTime(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}
