import type { PostView } from '../../domain/posts/post-read-model.js';
import { parseFeedSort } from '../../domain/posts/read-cursors.js';
import { hydratePosts, latestFeedPage, parsePageLimit, type KeysetPage } from './post-reads.js';
import { trendingFeedPage, type TrendingDeps } from './trending.js';

/**
 * GET /feed: `latest` pages the posts table itself; `trending` pages the ranked snapshot (see
 * trending.ts), whose ids are hydrated here in rank order by the same read service, so both
 * sorts answer the same item shape.
 */
export async function feedPage(
  deps: TrendingDeps,
  input: { sort?: unknown; cursor?: string | undefined; limit?: unknown },
): Promise<KeysetPage<PostView>> {
  const sort = parseFeedSort(input.sort);
  if (sort === 'latest') return latestFeedPage(deps, input);
  const limit = parsePageLimit(input.limit);
  const ranked = await trendingFeedPage(deps, { cursor: input.cursor, limit });
  return {
    items: await hydratePosts(deps, ranked.postIds),
    hasMore: ranked.hasMore,
    ...(ranked.hasMore && ranked.nextCursor ? { nextCursor: ranked.nextCursor } : {}),
  };
}
