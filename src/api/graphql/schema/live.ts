import {
  postCountsEvents,
  postCreatedEvents,
  type LiveSubscription,
  type PostEvent,
} from '../../../app/live-updates.js';
import { parsePostId, unknownPost } from '../../../domain/posts/engagement-rules.js';
import type { PostView } from '../../../domain/posts/post-read-model.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { accountLoader, likedLoader, postLoader, trendingScoreLoader } from './post-loaders.js';
import { PostRef } from './post.js';

/*
 * Subscriptions over server-sent events (POST or GET /graphql with `Accept: text/event-stream`).
 * Events travel through Redis pub/sub (topics in src/app/live-updates.ts, published after the
 * write committed by src/app/commit-notifier.ts), so a subscriber on one API process hears writes
 * made on any other. Each event names a post; the post is loaded afresh for it (the per-request
 * loaders are emptied first, since a subscription's context lives as long as the stream), so counts
 * are the ones after the write. A post that is no longer shown (its payment
 * failed) produces no event.
 */

builder.subscriptionType({});

/**
 * The posts named by `events`, loaded one event at a time. Not an async generator: ending the
 * subscription (the client went away) must unsubscribe at once, not at the next event.
 */
function postsOf(ctx: GraphQLContext, events: LiveSubscription<PostEvent>): AsyncIterableIterator<PostView> {
  const iterator: AsyncIterableIterator<PostView> = {
    next: async () => {
      for (;;) {
        const event = await events.next();
        if (event.done) return { value: undefined, done: true };
        const post = await freshPost(ctx, event.value.postId);
        if (post) return { value: post, done: false };
      }
    },
    return: () => events.return(),
    throw: (error: unknown) => events.throw(error),
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

async function freshPost(ctx: GraphQLContext, postId: string): Promise<PostView | null> {
  for (const loader of [postLoader, accountLoader, likedLoader, trendingScoreLoader]) {
    loader(ctx).clearAll();
  }
  return postLoader(ctx).load(postId);
}

builder.subscriptionFields((t) => ({
  postCreated: t.field({
    type: PostRef,
    description:
      'Every new post, reply and quote, from when the subscription starts (at most once each: events during a disconnect are lost). Needs `read`.',
    authScopes: { read: true },
    rateLimit: 'read',
    subscribe: async (_root, _args, ctx) => {
      const events = postCreatedEvents(ctx.deps);
      await events.ready;
      return postsOf(ctx, events);
    },
    resolve: (post) => post,
  }),
  postCountsChanged: t.field({
    type: PostRef,
    description:
      'The post each time it is liked, unliked, replied to, quoted or reposted, reloaded so likeCount, replyCount and repostCount are current (at most once each: events during a disconnect are lost). An unknown id is NOT_FOUND. Needs `read`.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_root, { id }, ctx) => {
      const postId = parsePostId(String(id));
      const events = postCountsEvents(ctx.deps, postId);
      try {
        await events.ready;
        // Checked after subscribing, so no change between the check and the subscription is lost.
        if (!(await freshPost(ctx, postId))) throw unknownPost(postId);
      } catch (error) {
        await events.return();
        throw error;
      }
      return postsOf(ctx, events);
    },
    resolve: (post) => post,
  }),
}));
