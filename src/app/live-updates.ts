import type { LiveEvents, LiveSubscription } from '../adapters/redis/live-events.js';

export type { LiveSubscription };

/*
 * What the GraphQL subscriptions (postCreated, postCountsChanged) hear: their topics and payloads,
 * and the subscribing side. Only commit-notifier.ts publishes to these topics, after the write
 * committed (never inside the transaction); Redis pub/sub carries the event to every API process.
 * An event names a post id only; the subscription loads the post, so a subscriber always sees
 * current state. Topic names and payloads are a contract between processes of different versions
 * during a deploy: change them only with both sides.
 */

export interface PostEvent {
  postId: string;
}

/** Every new post, reply and quote. */
export const POST_CREATED_TOPIC = 'post-created';
/** The post's like, reply, quote or repost count moved. */
export const postCountsTopic = (postId: string) => `post-counts:${postId}`;

export function postCreatedEvents(deps: {
  liveEvents: Pick<LiveEvents, 'subscribe'>;
}): LiveSubscription<PostEvent> {
  return deps.liveEvents.subscribe<PostEvent>(POST_CREATED_TOPIC);
}

export function postCountsEvents(
  deps: { liveEvents: Pick<LiveEvents, 'subscribe'> },
  postId: string,
): LiveSubscription<PostEvent> {
  return deps.liveEvents.subscribe<PostEvent>(postCountsTopic(postId));
}
