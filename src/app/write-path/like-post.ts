import type { Db } from '../../adapters/postgres/db.js';
import { setLikeRow } from '../../adapters/postgres/likes.repository.js';
import { notifyCommitted, type LiveNoticeDeps } from '../commit-notifier.js';
import {
  likeEventType,
  parsePostId,
  unknownPost,
  type LikeState,
} from '../../domain/posts/engagement-rules.js';

interface LikeDeps extends LiveNoticeDeps {
  db: Db;
}

export interface LikeChange extends LikeState {
  /** The post liked or unliked (parsed from the request). */
  postId: string;
  /** False when the like already was in the asked state (nothing written, no live update). */
  changed: boolean;
}

/** A like (`liked`) or unlike, as REST and GraphQL call it (commitLike), answered as they show it. */
export async function likePost(
  deps: LikeDeps,
  accountId: string,
  rawPostId: unknown,
  liked: boolean,
): Promise<LikeState> {
  const state = await commitLike(deps, accountId, rawPostId, liked);
  return { liked: state.liked, likeCount: state.likeCount };
}

/**
 * Likes and unlikes a post: free (no ledger movement, nothing on chain) and idempotent. The like
 * row and its 'post.liked' / 'post.unliked' event commit together, and the event is written only
 * when the state changed, so repeating a like adds no engagement to analytics. Liking one's own
 * post is allowed (the spec is silent); the creator fund's anti-sybil rules discount it.
 *
 * One round trip: the database function `set_like` (schema/postgres/2026_11_25_a_set_like_function.ts)
 * checks the post, writes the row and the event and answers the like count as the likes trigger
 * left it (concurrent likes included). Likes come by the hundred a second, and every statement
 * costs the API's event loop a round trip the reads are waiting behind.
 */
export async function commitLike(
  deps: LikeDeps,
  accountId: string,
  rawPostId: unknown,
  liked: boolean,
): Promise<LikeChange> {
  const postId = parsePostId(rawPostId);
  const row = await setLikeRow(deps.db, { accountId, postId, liked, eventType: likeEventType(liked) });
  if (!row) throw unknownPost(postId);
  // Its like count, to the read caches and subscribers (best effort, not awaited), only when the
  // state changed.
  if (row.like_changed) notifyCommitted(deps, { kind: 'like-changed', postId });
  return { liked, likeCount: row.post_like_count, postId, changed: row.like_changed };
}
