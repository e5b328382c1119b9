import type { PostWithContext } from '../../app/feed/post-reads.js';
import type { TimelineItem } from '../../app/feed/user-timeline.js';
import type { PostView } from '../../domain/posts/post-reads.js';
import { avatarUrl } from './views.js';

/** The spec's Post as feed items carry it: author without wallet, no thread context. */
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
    ...countsView(post),
    created_at: post.createdAt.toISOString(),
  };
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
