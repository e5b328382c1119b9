import type { Db } from '../../adapters/postgres/db.js';
import { createPostReadStore } from '../../adapters/postgres/post-reads.repository.js';
import { findByHandle, type AccountStore } from '../../domain/accounts/accounts.service.js';
import type { PostView } from '../../domain/posts/post-read-model.js';
import { decodePosition, encodePosition, timelineScope } from '../../domain/posts/read-cursors.js';
import { parsePageLimit, type KeysetPage } from './post-reads.js';

export interface TimelineDeps {
  db: Db;
  accounts: AccountStore;
  cursorSecret: string;
}

/** A timeline entry: the post, and for a repost who reposted it and when. */
export interface TimelineItem {
  post: PostView;
  repost: { handle: string; at: Date } | null;
}

/**
 * GET /users/{handle}/posts: the account's posts and reposts merged, newest first (a repost at
 * the time it was reposted), keyset-paged on (time, entry id) with a cursor bound to the account.
 * Two statements: the account, the page with authors and counts.
 */
export async function userTimeline(
  deps: TimelineDeps,
  rawHandle: string,
  input: { cursor?: string | undefined; limit?: unknown },
): Promise<KeysetPage<TimelineItem>> {
  const limit = parsePageLimit(input.limit);
  const account = await findByHandle(deps.accounts, rawHandle);
  const scope = timelineScope(account.id);
  const after =
    input.cursor !== undefined ? decodePosition(deps.cursorSecret, scope, input.cursor) : undefined;
  const store = createPostReadStore(deps.db);
  const rows = await store.timeline(account.id, { limit: limit + 1, ...(after ? { after } : {}) });
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map((row) => ({
      post: row.post,
      repost: row.repostedAt ? { handle: account.handle, at: row.repostedAt } : null,
    })),
    hasMore,
    ...(hasMore && last
      ? { nextCursor: encodePosition(deps.cursorSecret, scope, { at: last.atExact, id: last.entryId }) }
      : {}),
  };
}
