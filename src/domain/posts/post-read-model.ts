import type { PostType } from './post-rules.js';

/**
 * A post as the read path shows it: the post, its author and its counts, all from one statement
 * (the counts are stored on the post row and kept by the database as engagement comes and goes).
 * Posts whose payment failed on chain never get this far: the store leaves them out (they were
 * refunded; nobody paid for them).
 */
export interface PostView extends PostCounts {
  id: string;
  type: PostType;
  content: string;
  parentId: string | null;
  quotedPostId: string | null;
  createdAt: Date;
  /** `created_at` to the microsecond (ISO 8601 UTC): a Date would round it, and a cursor must not. */
  createdAtExact: string;
  author: PostAuthor;
}

export interface PostAuthor {
  id: string;
  handle: string;
  displayName: string;
  /** Null until the user sets one (the transport substitutes our default avatar). */
  avatarUrl: string | null;
  walletAddress: string;
}

/**
 * Engagement of one post as stored with it: likes (every like row), and the replies, quotes and
 * reposts whose payment did not fail.
 */
export interface PostCounts {
  likeCount: number;
  replyCount: number;
  quoteCount: number;
  repostCount: number;
}

/** One entry of a profile timeline: the account's own post, or its repost of someone's post. */
export interface TimelineRow {
  /** The post's id, or the repost's id for a repost: unique across both (UUIDs). */
  entryId: string;
  /** When the entry joined the timeline: the post's or the repost's created_at, to the microsecond. */
  atExact: string;
  post: PostView;
  /** For a repost (by the timeline's owner): when it was reposted; null for the owner's own post. */
  repostedAt: Date | null;
}

/** Where a keyset page stops: an exact instant and the id breaking ties at that instant. */
export interface PagePosition {
  at: string;
  id: string;
}

/**
 * The read path's statements. Each method is ONE statement returning posts with their authors and
 * counts, so a page costs one statement whatever its size.
 */
export interface PostReadStore {
  /** The visible posts among `ids`, with authors and counts; any order, unknown and hidden ids left out. */
  byIds(ids: readonly string[]): Promise<PostView[]>;
  /** The visible post `id` and the visible posts it replies to or quotes (its context). */
  withContext(id: string): Promise<PostView[]>;
  /** Visible posts newest first by (created_at, id), strictly after `after`. */
  latest(query: { limit: number; after?: PagePosition }): Promise<PostView[]>;
  /** The account's visible posts and reposts merged, newest first by (time, entry id). */
  timeline(accountId: string, query: { limit: number; after?: PagePosition }): Promise<TimelineRow[]>;
  /** Visible replies to `parentId`, oldest first by (created_at, id), strictly after `after`. */
  replies(parentId: string, query: { limit: number; after?: PagePosition }): Promise<PostView[]>;
  /** Which of `ids` the account has liked, in one statement (GraphQL `viewerHasLiked`). */
  likedBy(accountId: string, ids: readonly string[]): Promise<Set<string>>;
}
