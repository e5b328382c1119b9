import type { PostType } from './post-rules.js';

/**
 * What the read path knows about a post, before engagement is counted. Posts whose payment failed
 * on chain never get this far: the store leaves them out (they were refunded; nobody paid for them).
 */
export interface PostSummary {
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

/** Engagement of one post; replies and reposts whose payment failed on chain do not count. */
export interface PostEngagement {
  likeCount: number;
  replyCount: number;
  repostCount: number;
}

export type PostView = PostSummary & PostEngagement;

/** One entry of a profile timeline: the account's own post, or its repost of someone's post. */
export interface TimelineRow {
  /** The post's id, or the repost's id for a repost: unique across both (UUIDs). */
  entryId: string;
  /** When the entry joined the timeline: the post's or the repost's created_at, to the microsecond. */
  atExact: string;
  post: PostSummary;
  /** For a repost (by the timeline's owner): when it was reposted; null for the owner's own post. */
  repostedAt: Date | null;
}

/** Where a keyset page stops: an exact instant and the id breaking ties at that instant. */
export interface PagePosition {
  at: string;
  id: string;
}

export interface PostReadStore {
  /** The visible posts among `ids`, with authors; any order, unknown and hidden ids left out. */
  summaries(ids: readonly string[]): Promise<PostSummary[]>;
  /** Engagement counts of `ids`, in one statement; a post with none may be missing from the map. */
  engagement(ids: readonly string[]): Promise<Map<string, PostEngagement>>;
  /** Visible posts newest first by (created_at, id), strictly after `after`. */
  latest(query: { limit: number; after?: PagePosition }): Promise<PostSummary[]>;
  /** The account's visible posts and reposts merged, newest first by (time, entry id). */
  timeline(accountId: string, query: { limit: number; after?: PagePosition }): Promise<TimelineRow[]>;
  /** Visible replies to `parentId`, oldest first by (created_at, id), strictly after `after`. */
  replies(parentId: string, query: { limit: number; after?: PagePosition }): Promise<PostSummary[]>;
  /** Which of `ids` the account has liked, in one statement (GraphQL `viewerHasLiked`). */
  likedBy(accountId: string, ids: readonly string[]): Promise<Set<string>>;
}

export const NO_ENGAGEMENT: PostEngagement = { likeCount: 0, replyCount: 0, repostCount: 0 };
