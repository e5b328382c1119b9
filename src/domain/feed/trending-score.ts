/**
 * The trending score: Hacker-News-style gravity over weighted engagement.
 *
 *   score = (1 + 1·likes + 3·replies + 4·quotes + 2·reposts) / (age_hours + 2) ^ 1.5
 *
 * Replies and quotes weigh most (someone paid a dollar and wrote something), reposts next (a paid
 * signal without words), likes least (free). The +1 lets a new post with no engagement rank by
 * freshness; the +2 hours keeps the first minutes from dividing by almost nothing. Gravity 1.5 (HN
 * uses 1.8) lets a post that keeps earning paid engagement stay up for about a day.
 */
export const TRENDING_WEIGHTS = { likes: 1, replies: 3, quotes: 4, reposts: 2 } as const;
export const TRENDING_GRAVITY = 1.5;
export const TRENDING_AGE_OFFSET_HOURS = 2;

export interface Engagement {
  likes: number;
  replies: number;
  quotes: number;
  reposts: number;
}

export function trendingScore(engagement: Engagement, ageHours: number): number {
  const weighted =
    1 +
    TRENDING_WEIGHTS.likes * engagement.likes +
    TRENDING_WEIGHTS.replies * engagement.replies +
    TRENDING_WEIGHTS.quotes * engagement.quotes +
    TRENDING_WEIGHTS.reposts * engagement.reposts;
  return weighted / Math.pow(Math.max(0, ageHours) + TRENDING_AGE_OFFSET_HOURS, TRENDING_GRAVITY);
}
