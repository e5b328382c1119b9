import type { Db } from '../../adapters/postgres/db.js';
import { createPostReadStore } from '../../adapters/postgres/post-reads.repository.js';
import { parseHistoryLimit } from '../../domain/ledger/transaction-history.js';
import { parsePostId, unknownPost } from '../../domain/posts/engagement-rules.js';
import type { PostReadStore, PostView } from '../../domain/posts/post-read-model.js';
import { decodePosition, encodePosition, LATEST_FEED_SCOPE } from '../../domain/posts/read-cursors.js';

export interface PostReadDeps {
  db: Db;
  /** HMAC key of the opaque page cursors (per deployment). */
  cursorSecret: string;
}

/** A keyset page: `nextCursor` only when there is more. */
export interface KeysetPage<T> {
  items: T[];
  hasMore: boolean;
  nextCursor?: string;
}

/** Page size of every post listing: the spec's feed rule (1 to 50, default 20), as history's. */
export const parsePageLimit = parseHistoryLimit;

/**
 * Posts by id, in the order given (a ranking's), with authors and counts: one statement. Ids that
 * name no visible post (unknown, or their payment failed) are dropped.
 */
export async function hydratePosts(deps: { db: Db }, ids: readonly string[]): Promise<PostView[]> {
  const views = await createPostReadStore(deps.db).byIds(ids);
  const byId = new Map(views.map((view) => [view.id, view]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** GET /feed?sort=latest: every visible post newest first, keyset-paged on (created_at, id). */
export function latestFeedPage(
  deps: PostReadDeps,
  input: { cursor?: string | undefined; limit?: unknown },
): Promise<KeysetPage<PostView>> {
  return postKeysetPage(deps, LATEST_FEED_SCOPE, input, (store, page) => store.latest(page));
}

/**
 * A keyset page of posts in (created_at, id) order, the cursor bound to `scope`: decode the cursor,
 * read one row more than the page (it tells whether another page exists without a count), and
 * sign where the next page starts. One statement whatever the page size.
 */
export async function postKeysetPage(
  deps: PostReadDeps,
  scope: string,
  input: { cursor?: string | undefined; limit?: unknown },
  read: (
    store: PostReadStore,
    page: { limit: number; after?: { at: string; id: string } },
  ) => Promise<PostView[]>,
): Promise<KeysetPage<PostView>> {
  const limit = parsePageLimit(input.limit);
  const after =
    input.cursor !== undefined ? decodePosition(deps.cursorSecret, scope, input.cursor) : undefined;
  const store = createPostReadStore(deps.db);
  const rows = await read(store, { limit: limit + 1, ...(after ? { after } : {}) });
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page,
    hasMore,
    ...(hasMore && last
      ? { nextCursor: encodePosition(deps.cursorSecret, scope, { at: last.createdAtExact, id: last.id }) }
      : {}),
  };
}

/** One post with its thread context: the post replied to and the post quoted, one level deep. */
export interface PostWithContext {
  post: PostView;
  /** For a reply: its parent; null otherwise, or when the parent is not shown (payment failed). */
  parent: PostView | null;
  /** For a quote: the quoted post; null otherwise, or when it is not shown (payment failed). */
  quotedPost: PostView | null;
}

/** GET /posts/{id}: one statement (the post with its parent or quoted post, authors and counts). */
export async function getPost(deps: { db: Db }, rawId: unknown): Promise<PostWithContext> {
  const id = parsePostId(rawId);
  const views = await createPostReadStore(deps.db).withContext(id);
  const post = views.find((view) => view.id === id);
  if (!post) throw unknownPost(id);
  const view = (ref: string | null) => (ref === null ? null : (views.find((v) => v.id === ref) ?? null));
  return { post, parent: view(post.parentId), quotedPost: view(post.quotedPostId) };
}
