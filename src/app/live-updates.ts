import type { Logger } from 'pino';
import type { LiveEvents, LiveSubscription } from '../adapters/redis/live-events.js';

export type { LiveSubscription };

/*
 * What the GraphQL subscriptions (postCreated, postCountsChanged) hear, and who tells them: the
 * REST and GraphQL write paths call these after their transaction committed (never inside it), and
 * Redis pub/sub carries the event to every API process. An event names a post id only; the
 * subscription loads the post, so a subscriber always sees current state.
 *
 * Publishing is best effort: a failed publish is logged and the write still answers, since the post,
 * like or repost is committed and a live update is only a hint.
 */

export interface LiveUpdatesDeps {
  liveEvents: LiveEvents;
  logger: Logger;
}

export interface PostEvent {
  postId: string;
}

const POST_CREATED = 'post-created';
const countsTopic = (postId: string) => `post-counts:${postId}`;

/** A post, reply or quote was written: it is new, and its parent or quoted post has a new count. */
export async function postWritten(
  deps: LiveUpdatesDeps,
  post: { id: string; referenceId: string | null },
): Promise<void> {
  await publishAll(deps, [
    [POST_CREATED, { postId: post.id }],
    ...(post.referenceId ? [[countsTopic(post.referenceId), { postId: post.referenceId }] as const] : []),
  ]);
}

/** A like or unlike changed the post's like count, or a repost its repost count. */
export async function postCountsChanged(deps: LiveUpdatesDeps, postId: string): Promise<void> {
  await publishAll(deps, [[countsTopic(postId), { postId }]]);
}

export function postCreatedEvents(deps: LiveUpdatesDeps): LiveSubscription<PostEvent> {
  return deps.liveEvents.subscribe<PostEvent>(POST_CREATED);
}

export function postCountsEvents(deps: LiveUpdatesDeps, postId: string): LiveSubscription<PostEvent> {
  return deps.liveEvents.subscribe<PostEvent>(countsTopic(postId));
}

async function publishAll(
  deps: LiveUpdatesDeps,
  events: ReadonlyArray<readonly [string, PostEvent]>,
): Promise<void> {
  const results = await Promise.allSettled(
    events.map(([topic, payload]) => deps.liveEvents.publish(topic, payload)),
  );
  for (const result of results) {
    if (result.status === 'rejected') {
      deps.logger.warn({ err: result.reason }, 'live update not published');
    }
  }
}
