import type { PostView } from '../../domain/posts/post-read-model.js';
import { encodePosition, repliesScope } from '../../domain/posts/read-cursors.js';
import { postKeysetPage, type KeysetPage, type PostReadDeps } from './post-reads.js';

/**
 * The replies to one post, oldest first (a thread reads in the order it was written), keyset-paged
 * on (created_at, id) with a cursor bound to the post. One statement: the page with authors and
 * counts. Replies whose payment failed are left out, as everywhere.
 */
export function repliesPage(
  deps: PostReadDeps,
  parentId: string,
  input: { cursor?: string | undefined; limit?: unknown },
): Promise<KeysetPage<PostView>> {
  return postKeysetPage(deps, repliesScope(parentId), input, (store, page) => store.replies(parentId, page));
}

/** A reply's own cursor: where the page after it starts (the same value as a page's nextCursor). */
export function replyCursor(deps: { cursorSecret: string }, parentId: string, reply: PostView): string {
  return encodePosition(deps.cursorSecret, repliesScope(parentId), {
    at: reply.createdAtExact,
    id: reply.id,
  });
}
