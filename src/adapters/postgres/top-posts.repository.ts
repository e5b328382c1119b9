import { sql } from 'kysely';
import type { Db } from './db.js';

/** One of a creator's posts with what it earned them and the engagement it drew. */
export interface PostPerformanceRow {
  postId: string;
  type: string;
  content: string;
  createdAt: Date;
  /** Micro-USD the author earned from replies, quotes and reposts of this post, net of reversals. */
  earnedMicro: bigint;
  likes: number;
  replies: number;
  quotes: number;
  reposts: number;
}

export type TopPostsOrder = 'earnings' | 'engagement';

/**
 * A creator's best posts, read from the ledger and the posts tables (not ClickHouse), so the
 * dashboard's table moves the moment a paid reply lands, ahead of the analytics shipper.
 *
 * Earned: the author's `earned` legs on the movements of replies, quotes and reposts of the post,
 * together with the reversals of those movements (a failed payment takes the share back).
 * Engagement counts are the ones stored on the post (replies, quotes and reposts whose payment
 * failed on chain left out, as the feed shows them). Cost: one statement; each candidate post
 * costs its earnings' index lookups, so the candidates are the creator's latest 500 posts (a
 * creator with more sees their best among those).
 */
export async function topPostsOf(
  db: Db,
  authorId: string,
  options: { order: TopPostsOrder; limit: number },
): Promise<PostPerformanceRow[]> {
  const orderBy =
    options.order === 'earnings'
      ? sql`earned DESC, engagement DESC, created_at DESC`
      : sql`engagement DESC, earned DESC, created_at DESC`;
  const result = await sql<{
    id: string;
    type: string;
    content: string;
    created_at: Date;
    earned: bigint;
    likes: number;
    replies: number;
    quotes: number;
    reposts: number;
    engagement: number;
  }>`
    WITH candidates AS (
      SELECT p.id, p.type, p.content, p.created_at,
             p.like_count AS likes, p.reply_count AS replies,
             p.quote_count AS quotes, p.repost_count AS reposts
        FROM posts p
       WHERE p.author_id = ${authorId}::uuid AND NOT p.failed
       ORDER BY p.created_at DESC
       LIMIT 500
    ), scored AS (
      SELECT c.*,
        coalesce((
          SELECT sum(l.amount)
            FROM ledger_legs l
            JOIN ledger_accounts la ON la.id = l.ledger_account_id AND la.account_id = ${authorId}::uuid
            JOIN ledger_movements m ON m.id = l.movement_id
           WHERE l.counts = 'earned'
             AND coalesce(m.reverses_id, m.id) IN (
                   SELECT e.movement_id FROM posts e WHERE e.parent_id = c.id OR e.quoted_post_id = c.id
                   UNION ALL
                   SELECT r.movement_id FROM reposts r WHERE r.post_id = c.id)
        ), 0)::bigint AS earned
      FROM candidates c
    )
    SELECT *, (likes + replies + quotes + reposts) AS engagement
      FROM scored
     ORDER BY ${orderBy}
     LIMIT ${options.limit}`.execute(db);
  return result.rows.map((row) => ({
    postId: row.id,
    type: row.type,
    content: row.content,
    createdAt: row.created_at,
    earnedMicro: row.earned,
    likes: row.likes,
    replies: row.replies,
    quotes: row.quotes,
    reposts: row.reposts,
  }));
}
