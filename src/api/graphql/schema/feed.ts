import { feedPage } from '../../../app/feed/feed-page.js';
import { repliesPage, replyCursor } from '../../../app/feed/post-replies.js';
import { hydratePosts } from '../../../app/feed/post-reads.js';
import { trendingFeedPage } from '../../../app/feed/trending.js';
import { userTimeline } from '../../../app/feed/user-timeline.js';
import type { Account } from '../../../domain/accounts/account.js';
import type { PostView } from '../../../domain/posts/post-read-model.js';
import { encodePosition, LATEST_FEED_SCOPE } from '../../../domain/posts/read-cursors.js';
import { builder } from '../builder.js';
import { AccountRef } from './account.js';
import { accountKey, postKey, timelineKey } from '../../../app/change-signals.js';
import { readsKey, readsPosts } from '../context.js';
import { lastEdgeCursor, lazyEdge, pageInfoOf, pageInput, withAfterArgument } from './page-args.js';
import { postLoader, trendingScoreLoader } from './post-loaders.js';
import { PostRef } from './post.js';

/*
 * The read path's lists over the REST read services (src/app/feed): the same pages, the same
 * opaque cursors (`after` takes a `pageInfo.endCursor`, REST's `next_cursor`), the same errors
 * (bad `first` or `after` BAD_USER_INPUT, an expired trending cursor CURSOR_EXPIRED).
 */

const FeedSortEnum = builder.enumType('FeedSort', {
  values: {
    TRENDING: { value: 'trending', description: 'The ranked snapshot, rebuilt every few seconds.' },
    LATEST: { value: 'latest', description: 'Every post, newest first.' },
  } as const,
});

const PostConnection = builder.connectionObject({
  type: PostRef,
  name: 'PostConnection',
  edgesNullable: false,
  nodeNullable: false,
});

/** A latest-feed edge's own cursor: the position REST's next_cursor would name after this post. */
function latestCursor(secret: string, post: PostView): string {
  return encodePosition(secret, LATEST_FEED_SCOPE, { at: post.createdAtExact, id: post.id });
}

interface TrendingEntry {
  post: PostView;
  score: number;
}

const TrendingEntryRef = builder.objectRef<TrendingEntry>('TrendingEntry').implement({
  fields: (t) => ({
    post: t.field({ type: PostRef, resolve: (entry) => entry.post }),
    score: t.exposeFloat('score', {
      description: 'The post’s score in the snapshot the list was read from.',
    }),
  }),
});

builder.queryFields((t) => ({
  feed: t.connection(
    {
      type: PostRef,
      description:
        'The global feed (REST GET /feed), `first` 1 to 50 (default 20). Page on with `after: pageInfo.endCursor`. LATEST edges carry their own cursors; TRENDING edges carry one only on the last edge of a page that has more (the others are ""). A TRENDING cursor whose snapshot expired (15 min) is CURSOR_EXPIRED: start again without `after`. Needs `read`.',
      authScopes: { read: true },
      args: { sort: t.arg({ type: FeedSortEnum, required: true, defaultValue: 'trending' }) },
      resolve: async (_root, args, ctx) => {
        const input = pageInput(args);
        const page = await withAfterArgument(() => feedPage(ctx.readDeps, { sort: args.sort, ...input }));
        // As REST's feed pages: a trending page is its snapshot's, a latest page with a cursor a
        // window new posts never enter, the first latest page what a new post changes.
        if (args.sort === 'trending') readsKey(ctx, 'trending');
        else if (input.cursor === undefined) readsKey(ctx, 'latest');
        readsPosts(ctx, page.items);
        // A LATEST edge's cursor is an HMAC: signed only when a query selects it.
        const edges = page.items.map((post, i) =>
          args.sort === 'latest'
            ? lazyEdge(post, () => latestCursor(ctx.deps.cursorSecret, post))
            : { node: post, cursor: lastEdgeCursor(i, page.items.length, page.nextCursor) },
        );
        return { edges, pageInfo: pageInfoOf(page, edges) };
      },
    },
    PostConnection,
  ),
  trending: t.field({
    type: [TrendingEntryRef],
    description:
      'The first page of the current trending snapshot with each post’s score, best first; `first` 1 to 50 (default 20). Use `feed(sort: TRENDING)` to page further. Needs `read`.',
    authScopes: { read: true },
    args: { first: t.arg.int() },
    resolve: async (_root, args, ctx) => {
      const { limit } = pageInput({ first: args.first });
      const ranked = await trendingFeedPage(ctx.readDeps, { limit });
      const posts = await hydratePosts(ctx.readDeps, ranked.postIds);
      readsKey(ctx, 'trending');
      readsPosts(ctx, posts);
      // The page already knows these posts and scores: later Post fields need no second read.
      for (const post of posts) {
        postLoader(ctx).prime(post.id, post);
        const score = ranked.scores.get(post.id);
        if (score !== undefined) trendingScoreLoader(ctx).prime(post.id, score);
      }
      return posts.flatMap((post) => {
        const score = ranked.scores.get(post.id);
        return score === undefined ? [] : [{ post, score }];
      });
    },
  }),
}));

interface TimelineEntry {
  post: PostView;
  /** The timeline's owner when the entry is their repost, with when they reposted. */
  repost: { by: Account; at: Date } | null;
}

const TimelineItemRef = builder.objectRef<TimelineEntry>('TimelineItem').implement({
  description: 'One entry of a profile timeline: the account’s own post, or a post it reposted.',
  fields: (t) => ({
    post: t.field({ type: PostRef, resolve: (entry) => entry.post }),
    repostedBy: t.field({
      type: AccountRef,
      nullable: true,
      description: 'For a repost: who reposted (the timeline’s owner); null for their own post.',
      resolve: (entry) => entry.repost?.by ?? null,
    }),
    repostedAt: t.field({
      type: 'DateTime',
      nullable: true,
      resolve: (entry) => entry.repost?.at ?? null,
    }),
  }),
});

const TimelineConnection = builder.connectionObject({
  type: TimelineItemRef,
  name: 'TimelineConnection',
  edgesNullable: false,
  nodeNullable: false,
});

// On Account: the `user` query that reached it already checked `read` and spent the bucket.
builder.objectField(AccountRef, 'posts', (t) =>
  t.connection(
    {
      type: TimelineItemRef,
      description:
        'The profile timeline (REST GET /users/{handle}/posts): posts, replies, quotes and reposts merged newest first; `first` 1 to 50 (default 20). Page on with `after: pageInfo.endCursor` (only the last edge of a page that has more carries a cursor).',
      resolve: async (account, args, ctx) => {
        const input = pageInput(args);
        const page = await withAfterArgument(() => userTimeline(ctx.readDeps, account.handle, input));
        readsKey(ctx, timelineKey(account.id));
        readsKey(ctx, accountKey(account.id)); // repostedBy
        readsPosts(
          ctx,
          page.items.map((item) => item.post),
        );
        const edges = page.items.map((item, i) => ({
          node: { post: item.post, repost: item.repost ? { by: account, at: item.repost.at } : null },
          cursor: lastEdgeCursor(i, page.items.length, page.nextCursor),
        }));
        return { edges, pageInfo: pageInfoOf(page, edges) };
      },
    },
    TimelineConnection,
  ),
);

// On Post: every reply page is one read of its own, so ask for replies on one post (post(id)),
// not on each post of a feed page.
builder.objectField(PostRef, 'replies', (t) =>
  t.connection(
    {
      type: PostRef,
      description:
        'Replies to this post, oldest first; `first` 1 to 50 (default 20), `after` an edge cursor or `pageInfo.endCursor`. Costs two statements per post it is asked on: select it on a single post.',
      resolve: async (post, args, ctx) => {
        const input = pageInput(args);
        const page = await withAfterArgument(() => repliesPage(ctx.readDeps, post.id, input));
        // A new or hidden reply changes `post:<parent>` (its reply count).
        readsKey(ctx, postKey(post.id));
        readsPosts(ctx, page.items);
        const edges = page.items.map((reply) => ({
          node: reply,
          cursor: replyCursor(ctx.deps, post.id, reply),
        }));
        return { edges, pageInfo: pageInfoOf(page, edges) };
      },
    },
    PostConnection,
  ),
);
