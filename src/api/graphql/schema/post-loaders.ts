import { createContextCache } from '@pothos/core';
import DataLoader from 'dataloader';
import { hydratePosts } from '../../../app/feed/post-reads.js';
import { currentTrendingScores } from '../../../app/feed/trending.js';
import { likedPostIds, loadAccounts } from '../../../app/feed/viewer-reads.js';
import type { Account } from '../../../domain/accounts/account.js';
import type { PostView } from '../../../domain/posts/post-read-model.js';
import { accountKey, postKey } from '../../../app/change-signals.js';
import { readsKey, readsPosts, type GraphQLContext } from '../context.js';

/*
 * Per-request DataLoaders of the read path. Every Post field that reaches past the page it came
 * from (author, parent, quotedPost, viewerHasLiked, trendingScore) goes through one of these, so a
 * page of 50 posts costs the same number of statements as a page of 5: one per loader per level.
 */

/** Posts by id (parent, quotedPost, post(id)): hydratePosts once per batch, two statements. */
export const postLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, PostView | null>(async (ids) => {
      // Asked for by id: a post not shown (unknown, failed) is `post:<id>` too.
      for (const id of ids) readsKey(ctx, postKey(id));
      const views = await hydratePosts(ctx.readDeps, ids);
      readsPosts(ctx, views);
      const byId = new Map(views.map((view) => [view.id, view]));
      // Unknown posts and posts whose payment failed are null, as REST shows them nowhere.
      return ids.map((id) => byId.get(id) ?? null);
    }),
);

/** Post authors as the Account type: one SELECT per batch. */
export const accountLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, Account>(async (ids) => {
      for (const id of ids) readsKey(ctx, accountKey(id));
      const accounts = await loadAccounts(ctx.readDeps, ids);
      return ids.map((id) => accounts.get(id) ?? new Error(`No account ${id}`));
    }),
);

/** Whether the viewer liked each post: one `post_id = ANY(...)` statement per batch. */
export const likedLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, boolean>(async (postIds) => {
      const viewer = ctx.viewer;
      // Without a viewer nobody has liked anything; no statement is spent.
      if (!viewer) return postIds.map(() => false);
      const liked = await likedPostIds(ctx.readDeps, viewer.accountId, postIds);
      return postIds.map((id) => liked.has(id));
    }),
);

/** Scores in the current trending snapshot: one ZMSCORE per batch; null when not ranked. */
export const trendingScoreLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, number | null>((postIds) => {
      readsKey(ctx, 'trending');
      return currentTrendingScores(ctx.readDeps, postIds);
    }),
);
