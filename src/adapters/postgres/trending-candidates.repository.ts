import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * The shown posts of the last `days` days, with their age in hours and the counts stored on each
 * (shown replies, quotes and reposts; every like): one range scan of the shown posts' index, no
 * engagement row read.
 */
export async function trendingCandidates(
  db: Db,
  days: number,
): Promise<
  Array<{ id: string; age_hours: number; likes: number; replies: number; quotes: number; reposts: number }>
> {
  const { rows } = await sql<{
    id: string;
    age_hours: number;
    likes: number;
    replies: number;
    quotes: number;
    reposts: number;
  }>`
    SELECT p.id,
           extract(epoch FROM now() - p.created_at)::float8 / 3600 AS age_hours,
           p.like_count AS likes, p.reply_count AS replies,
           p.quote_count AS quotes, p.repost_count AS reposts
      FROM posts p
     WHERE NOT p.failed AND p.created_at > now() - make_interval(days => ${days})`.execute(db);
  return rows;
}
