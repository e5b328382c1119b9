import { sql } from 'kysely';
import { publicEventData } from '../../domain/events/event-data.js';
import type { AccountEvent, EventType } from '../../domain/events/event-types.js';
import type { Db } from './db.js';

/**
 * One writer numbers the log: this key's transaction-scoped advisory lock. A second sequencer
 * (another worker process) finds it taken and leaves the turn to the first; two numbering at once
 * would both read the same head and collide on (account_id, sequence).
 */
const SEQUENCER_LOCK = 3_900_039n;

/**
 * Moves up to `limit` committed staging rows into the account log, oldest first, numbering them
 * per account after the account's head, and shapes their `data` into its public form. One
 * transaction: a crash leaves the rows staged, never half moved. A row whose `dedupe_key` the
 * account's log already holds (engagement told at a payment's earlier confirmation) is dropped.
 *
 * Readers page by `sequence`; a batch commits before the next one takes the lock and reads the
 * heads (a lock is released only once its transaction is visible), so a number is never given
 * below one a reader has already seen.
 */
export async function sequenceStagedEvents(
  db: Db,
  limit: number,
  options: { lookFirst?: boolean } = {},
): Promise<{ moved: number; accounts: string[] }> {
  // The sequencer looks every 100 ms, and idle mostly finds nothing: one statement then, instead
  // of a transaction of round trips ten times a second. A row staged after this look waits for the
  // next turn, as one committed after the DELETE's snapshot would. Under writes the turn after one
  // that numbered events skips the look (lookFirst false): it would almost always find some.
  if (options.lookFirst ?? true) {
    const { rows: waiting } = await sql<{ staged: boolean }>`
      SELECT EXISTS (SELECT 1 FROM event_staging) AS staged`.execute(db);
    if (!waiting[0]?.staged) return { moved: 0, accounts: [] };
  }
  return db.transaction().execute(async (trx) => {
    // The lock is taken by the DELETE's own statement (one round trip fewer): without it (another
    // sequencer numbers now), the DELETE takes nothing.
    const { rows: staged } = await sql<{
      id: bigint;
      account_id: string;
      type: string;
      data: Record<string, unknown>;
      dedupe_key: string | null;
      created_at: Date;
    }>`
      WITH lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(${SEQUENCER_LOCK}) AS locked)
      DELETE FROM event_staging
       WHERE (SELECT locked FROM lock)
         AND id IN (SELECT id FROM event_staging ORDER BY id LIMIT ${limit})
      RETURNING id, account_id, type, data, dedupe_key, created_at`.execute(trx);
    if (staged.length === 0) return { moved: 0, accounts: [] };
    staged.sort((a, b) => (a.id < b.id ? -1 : 1));
    const input = staged.map((row, n) => ({
      n,
      account_id: row.account_id,
      type: row.type,
      data: publicEventData(row.type, row.data),
      dedupe_key: row.dedupe_key,
      created_at: row.created_at.toISOString(),
    }));
    const { rows: heads } = await sql<{ account_id: string }>`
      WITH input AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
          AS x (n integer, account_id uuid, type text, data jsonb, dedupe_key text, created_at timestamptz)),
      fresh AS (
        SELECT DISTINCT ON (i.account_id, coalesce(i.dedupe_key, i.n::text)) i.*
          FROM input i
         WHERE i.dedupe_key IS NULL
            OR NOT EXISTS (SELECT 1 FROM account_events e
                            WHERE e.account_id = i.account_id AND e.dedupe_key = i.dedupe_key)
         ORDER BY i.account_id, coalesce(i.dedupe_key, i.n::text), i.n),
      numbered AS (
        SELECT f.*, coalesce(h.last_sequence, 0) + row_number() OVER (PARTITION BY f.account_id ORDER BY f.n) AS sequence
          FROM fresh f LEFT JOIN account_event_heads h ON h.account_id = f.account_id),
      inserted AS (
        INSERT INTO account_events (account_id, sequence, type, data, dedupe_key, created_at)
        SELECT account_id, sequence, type, data, dedupe_key, created_at FROM numbered ORDER BY account_id, sequence
        RETURNING account_id, sequence)
      INSERT INTO account_event_heads AS h (account_id, last_sequence)
      SELECT account_id, max(sequence) FROM inserted GROUP BY account_id
          ON CONFLICT (account_id) DO UPDATE SET last_sequence = excluded.last_sequence
      RETURNING h.account_id`.execute(trx);
    return { moved: staged.length, accounts: heads.map((h) => h.account_id) };
  });
}

/** The account's events after `after` (a sequence; 0: from the start of the kept log), oldest first. */
export async function readEvents(
  db: Db,
  accountId: string,
  options: { after: bigint; limit: number; types?: readonly string[] | undefined },
): Promise<AccountEvent[]> {
  let query = db
    .selectFrom('account_events')
    .select(['id', 'type', 'created_at', 'sequence', 'data'])
    .where('account_id', '=', accountId)
    .where('sequence', '>', options.after)
    .orderBy('sequence')
    .limit(options.limit);
  if (options.types) query = query.where('type', '=', sql<string>`ANY(${[...options.types]}::text[])`);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    type: row.type as EventType,
    created_at: row.created_at.toISOString(),
    sequence: Number(row.sequence),
    data: row.data as Record<string, unknown>,
  }));
}

/** The sequence of the account's latest event (0 before its first). */
export async function lastSequence(db: Db, accountId: string): Promise<bigint> {
  const row = await db
    .selectFrom('account_event_heads')
    .select('last_sequence')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.last_sequence ?? 0n;
}

/**
 * Forgets events and delivery attempts older than `days` (the log keeps at least 30), at most
 * `limit` rows of each per call so a long-idle purge never holds a long transaction. The heads
 * stay: numbering goes on above what was forgotten.
 */
export async function purgeOldEvents(db: Db, days: number, limit: number): Promise<number> {
  const events = await sql`
    DELETE FROM account_events WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM account_events WHERE created_at < now() - make_interval(days => ${days}) LIMIT ${limit}))`.execute(
    db,
  );
  const deliveries = await sql`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE created_at < now() - make_interval(days => ${days}) LIMIT ${limit})`.execute(
    db,
  );
  return Number(events.numAffectedRows ?? 0n) + Number(deliveries.numAffectedRows ?? 0n);
}
