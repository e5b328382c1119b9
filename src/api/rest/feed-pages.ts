import { feedPage } from '../../app/feed/feed-page.js';
import { accountKey, postKey } from '../../app/change-signals.js';
import {
  createReadCache,
  READ_REFRESH_EVERY_MS,
  READ_STALE_MS,
  type DependencyTracker,
  type ReadCache,
} from '../../app/read-cache.js';
import { parseFeedSort } from '../../domain/posts/read-cursors.js';
import type { ApiDeps } from '../../app/api-deps.js';
import type { Admission } from '../admission.js';
import { feedPageJson } from './post-views.js';

/** Distinct feed pages (sort, cursor, limit) kept at once; the oldest goes first. */
const FEED_CACHE_MAX_PAGES = 1_000;

/**
 * What GET /api/v1/feed asks of its callers (the route's config, and the cached reads answered
 * before Fastify: cached-reads/cached-feed-reads.ts): a key with `read`, spending the `read` bucket.
 */
export const FEED_ADMISSION = { scope: 'read', bucket: 'read' } as const satisfies Admission;

/** GET /api/v1/feed's query as Fastify parsed and validated it. */
export interface FeedQuery {
  sort?: string;
  cursor?: string;
  limit?: string;
}

/**
 * GET /api/v1/feed's pages as UTF-8 JSON bytes, kept by (base URL, sort, cursor, limit). The feed is
 * the same for every reader (it holds nothing of the viewer's), and its first pages are what every
 * client polls: a page is kept until a change of what it shows (app/read-cache.ts), refreshed in
 * the background while other readers get the page they had for at most READ_STALE_MS. Shared by
 * the route (feed.routes.ts) and the cached reads answered before Fastify
 * (cached-reads/cached-feed-reads.ts).
 */
export interface FeedPages {
  /** The page asked for, with its cache key computed once (cached reads ask up to three things of it). */
  page(baseUrl: string, query: FeedQuery): FeedPage;
  /** The page: kept, shared with a computation in flight, or computed. */
  get(page: FeedPage, viewer: string | undefined): Promise<Buffer>;
  /** The kept page if it may be answered to `viewer` at once (ReadCache.answerNow). */
  answerNow(page: FeedPage, viewer: string | undefined): Buffer | undefined;
  /** A page is kept for this query: the route validated it before. */
  has(page: FeedPage): boolean;
}

export interface FeedPage {
  readonly baseUrl: string;
  readonly query: FeedQuery;
  readonly key: string;
}

export function createFeedPages(deps: ApiDeps): FeedPages {
  // Created on first use: the OpenAPI printer builds the routes with deps that refuse use.
  // Kept as bytes, encoded once per computation: a kept page is answered thousands of times a
  // second, and each answer of a string was a UTF-8 scan for its length and an encoding on write.
  let pages: ReadCache<Buffer> | undefined;
  const cache = () =>
    (pages ??= createReadCache(deps.changes, {
      ttlMs: deps.readCacheTtlMs,
      maxEntries: FEED_CACHE_MAX_PAGES,
      staleMs: READ_STALE_MS,
      expiredMs: READ_STALE_MS,
      refresh: 'background',
      refreshEveryMs: READ_REFRESH_EVERY_MS,
    }));
  const compute =
    ({ baseUrl, query }: FeedPage) =>
    async (track: DependencyTracker) => {
      const page = await feedPage(deps.reads, query);
      // A trending page is the snapshot's; a latest page with a cursor is a fixed window of
      // (created_at, id) that new posts never enter (they are newer); the first latest page is what a
      // new post changes. Every page shows its posts' counts and authors.
      if (parseFeedSort(query.sort) === 'trending') track.reads('trending');
      else if (query.cursor === undefined) track.reads('latest');
      for (const post of page.items) {
        track.reads(postKey(post.id));
        track.reads(accountKey(post.author.id));
      }
      return Buffer.from(feedPageJson(page, baseUrl));
    };
  return {
    page: (baseUrl, query) => ({
      baseUrl,
      query,
      key: JSON.stringify([baseUrl, query.sort, query.cursor, query.limit]),
    }),
    get: (page, viewer) => cache().get(page.key, compute(page), viewer),
    answerNow: (page, viewer) => cache().answerNow(page.key, viewer, compute(page)),
    has: (page) => cache().has(page.key),
  };
}
