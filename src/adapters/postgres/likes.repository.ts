import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * Sets account `accountId`'s like of post `postId` through the database function `set_like`
 * (schema/postgres/2026_11_25_a_set_like_function.ts), one round trip: it checks the post, writes
 * the row and the `eventType` event only when the state changes, and answers the like count as
 * the likes trigger left it. Undefined when the post does not exist.
 */
export async function setLikeRow(
  db: Db,
  like: { accountId: string; postId: string; liked: boolean; eventType: string },
): Promise<{ like_changed: boolean; post_like_count: number } | undefined> {
  const { rows } = await sql<{ like_changed: boolean; post_like_count: number }>`
    SELECT like_changed, post_like_count
      FROM set_like(${like.accountId}, ${like.postId}, ${like.liked}, ${like.eventType})`.execute(db);
  return rows[0];
}
