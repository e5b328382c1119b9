import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * How many accounts follow `accountId` now and began to in [from, to): an index range read of
 * follows_by_followee (followee_id, created_at). An unfollow deletes the row, and a follow again
 * starts a new one: a follower counts in the range of their latest follow only.
 */
export async function newFollowerCount(db: Db, accountId: string, from: Date, to: Date): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n
      FROM follows
     WHERE followee_id = ${accountId}::uuid AND created_at >= ${from} AND created_at < ${to}`.execute(db);
  return rows[0]?.n ?? 0;
}

/**
 * The handles of the accounts `ids` by primary key, and of the `tiedLimit` accounts of `tiedIds`
 * whose handles come first (byte order, as handles are lowercase ASCII), in one statement: a top
 * list's last place is shared by everyone tied there, and only the first of them by handle fit.
 */
export async function handlesOf(
  db: Db,
  ids: readonly string[],
  tiedIds: readonly string[],
  tiedLimit: number,
): Promise<Array<{ id: string; handle: string }>> {
  if (ids.length === 0 && (tiedIds.length === 0 || tiedLimit <= 0)) return [];
  const { rows } = await sql<{ id: string; handle: string }>`
    SELECT id, handle FROM accounts WHERE id = ANY(${ids}::uuid[])
    UNION ALL
    (SELECT id, handle FROM accounts WHERE id = ANY(${tiedIds}::uuid[])
      ORDER BY handle COLLATE "C" LIMIT ${Math.max(0, tiedLimit)})`.execute(db);
  return rows;
}
