import type { Db } from '../../adapters/postgres/db.js';
import {
  topPostsOf,
  type PostPerformanceRow,
  type TopPostsOrder,
} from '../../adapters/postgres/top-posts.repository.js';
import { AppError } from '../../domain/errors.js';

export type { PostPerformanceRow, TopPostsOrder };

export const MAX_TOP_POSTS = 20;

/**
 * A creator's own posts ranked by earnings or by engagement, best first (the creator dashboard's
 * table). `first` is 1 to MAX_TOP_POSTS, 5 when not given.
 */
export function topPosts(
  deps: { db: Db },
  accountId: string,
  options: { order: TopPostsOrder; first?: number | null },
): Promise<PostPerformanceRow[]> {
  const first = options.first ?? 5;
  if (!Number.isInteger(first) || first < 1 || first > MAX_TOP_POSTS) {
    throw new AppError('invalid_request', `first must be between 1 and ${MAX_TOP_POSTS}`, {
      field: 'first',
    });
  }
  return topPostsOf(deps.db, accountId, { order: options.order, limit: first });
}
