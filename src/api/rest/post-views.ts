import type { KeysetPage, PostWithContext } from '../../app/feed/post-reads.js';
import type { TimelineItem } from '../../app/feed/user-timeline.js';
import type { PostView } from '../../domain/posts/post-read-model.js';
import { avatarUrl } from '../http-views.js';

/**
 * The spec's Post as feed items carry it: author without wallet, no thread context. One object
 * literal per item, in the order the JSON shows it (no spread of a counts object: this runs for
 * every item of every page computed).
 */
export function feedItemView(post: PostView, baseUrl: string) {
  return {
    id: post.id,
    content: post.content,
    type: post.type,
    author: {
      handle: post.author.handle,
      display_name: post.author.displayName,
      avatar_url: avatarUrl(post.author, baseUrl),
    },
    like_count: post.likeCount,
    reply_count: post.replyCount,
    repost_count: post.repostCount,
    created_at: post.createdAt.toISOString(),
  };
}

/** GET /feed's body as JSON text: cached as it is, and sent without another serialization. */
export function feedPageJson(page: KeysetPage<PostView>, baseUrl: string): string {
  return JSON.stringify({
    posts: page.items.map((post) => feedItemView(post, baseUrl)),
    has_more: page.hasMore,
    ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
  });
}

/** The single-post author (with wallet_address); nested parent and quoted posts use it too. */
function contextPostView(post: PostView, baseUrl: string) {
  return {
    id: post.id,
    content: post.content,
    type: post.type,
    author: {
      handle: post.author.handle,
      wallet_address: post.author.walletAddress,
      display_name: post.author.displayName,
      avatar_url: avatarUrl(post.author, baseUrl),
    },
    ...countsView(post),
    created_at: post.createdAt.toISOString(),
  };
}

export function singlePostView(context: PostWithContext, baseUrl: string) {
  return {
    ...contextPostView(context.post, baseUrl),
    parent: context.parent ? contextPostView(context.parent, baseUrl) : null,
    quoted_post: context.quotedPost ? contextPostView(context.quotedPost, baseUrl) : null,
  };
}

/** A timeline entry: the feed item, plus who reposted it and when for a repost. */
export function timelineItemView(item: TimelineItem, baseUrl: string) {
  return {
    ...feedItemView(item.post, baseUrl),
    ...(item.repost ? { reposted_by: item.repost.handle, reposted_at: item.repost.at.toISOString() } : {}),
  };
}

function countsView(post: PostView) {
  return { like_count: post.likeCount, reply_count: post.replyCount, repost_count: post.repostCount };
}
