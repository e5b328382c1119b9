import { createPostReadStore } from '../../adapters/postgres/post-reads.repository.js';
import type { PostView } from '../../domain/posts/post-reads.js';
import { decodePosition, encodePosition, repliesScope } from '../../domain/posts/read-cursors.js';
import { parsePageLimit, withEngagement, type Page, type PostReadDeps } from './post-reads.js';

/**
 * The replies to one post, oldest first (a thread reads in the order it was written), keyset-paged
 * on (created_at, id) with a cursor bound to the post. Two statements: the page with authors, the
 * counts. Replies whose payment failed are left out, as everywhere.
 */
export async function repliesPage(
  deps: PostReadDeps,
  parentId: string,
  input: { cursor?: string | undefined; limit?: unknown },
): Promise<Page<PostView>> {
  const limit = parsePageLimit(input.limit);
  const scope = repliesScope(parentId);
  const after =
    input.cursor !== undefined ? decodePosition(deps.cursorSecret, scope, input.cursor) : undefined;
  const store = createPostReadStore(deps.db);
  // One extra row tells whether another page exists without a count.
  const rows = await store.replies(parentId, { limit: limit + 1, ...(after ? { after } : {}) });
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: await withEngagement(store, page),
    hasMore,
    ...(hasMore && last
      ? { nextCursor: encodePosition(deps.cursorSecret, scope, { at: last.createdAtExact, id: last.id }) }
      : {}),
  };
}

/** A reply's own cursor: where the page after it starts (the same value as a page's nextCursor). */
export function replyCursor(deps: { cursorSecret: string }, parentId: string, reply: PostView): string {
  return encodePosition(deps.cursorSecret, repliesScope(parentId), {
    at: reply.createdAtExact,
    id: reply.id,
  });
}
