import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * The replies, quotes and reposts made in [start, end) whose payment failed on chain or is still
 * in flight: each one's domain event id and its outbox status (`failed`, `signed` or `sent`).
 */
export async function paidEngagementInFlightOrFailed(
  db: Db,
  epoch: { start: Date; end: Date },
): Promise<Array<{ id: string; status: string }>> {
  const { rows } = await sql<{ id: string; status: string }>`
    SELECT e.id, c.status
      FROM domain_events e
      LEFT JOIN posts p ON e.type IN ('post.replied', 'post.quoted') AND p.id = e.post_id
      LEFT JOIN reposts r ON e.type = 'post.reposted' AND r.id = (e.payload->>'repost_id')::uuid
      JOIN chain_transactions c ON c.movement_id = coalesce(p.movement_id, r.movement_id)
     WHERE e.type IN ('post.replied', 'post.quoted', 'post.reposted')
       AND e.occurred_at >= ${epoch.start} AND e.occurred_at < ${epoch.end}
       AND c.status IN ('failed', 'signed', 'sent')`.execute(db);
  return rows;
}

/**
 * For each of `engagerIds`: whether it has a post, reply, quote or repost created before `end`
 * whose payment is settled (confirmed or finalized), and whether it has one still in flight
 * (signed or sent). One statement whatever the number of engagers (an array parameter, not a list
 * of values), each engager answered by index lookups (posts_by_author, reposts' unique
 * (reposter_id, post_id)).
 */
export async function engagersPaymentStates(
  db: Db,
  engagerIds: readonly string[],
  end: Date,
): Promise<Array<{ id: string; settled: boolean; in_flight: boolean }>> {
  const paid = (statuses: readonly string[]) => sql<boolean>`(
    EXISTS (SELECT 1 FROM posts p JOIN chain_transactions c ON c.movement_id = p.movement_id
             WHERE p.author_id = e.id AND p.created_at < ${end} AND c.status = ANY(${statuses}::text[]))
    OR EXISTS (SELECT 1 FROM reposts r JOIN chain_transactions c ON c.movement_id = r.movement_id
             WHERE r.reposter_id = e.id AND r.created_at < ${end} AND c.status = ANY(${statuses}::text[])))`;
  const { rows } = await sql<{ id: string; settled: boolean; in_flight: boolean }>`
    SELECT e.id, ${paid(['confirmed', 'finalized'])} AS settled, ${paid(['signed', 'sent'])} AS in_flight
      FROM unnest(${[...engagerIds]}::uuid[]) AS e(id)`.execute(db);
  return rows;
}

/**
 * Counts (as text) of this database's client transactions other than ours that began before `end`
 * and are still open, and of committed domain events dated before `end` past the event shipper's
 * cursor; and Postgres's `now()`. Autovacuum workers write no events, so client backends only.
 * Reading other sessions' `xact_start` needs the `pg_read_all_stats` role (or a superuser):
 * without it they read NULL and are not counted.
 */
export async function openTransactionsAndUnshippedEvents(
  db: Db,
  end: Date,
): Promise<{ open: string; unshipped: string; now: Date } | undefined> {
  const { rows } = await sql<{ open: string; unshipped: string; now: Date }>`
    SELECT
      (SELECT count(*) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
          AND xact_start IS NOT NULL AND xact_start < ${end})::text AS open,
      (SELECT count(*) FROM domain_events e, shipper_cursors c
        WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq)
          AND e.occurred_at < ${end})::text AS unshipped,
      now() AS now`.execute(db);
  return rows[0];
}
