import type { Transaction } from 'kysely';
import type { Database } from '../../adapters/postgres/database.js';
import type { Db } from '../../adapters/postgres/db.js';
import { postKey, type ChangeSignals } from '../change-signals.js';
import {
  likeEventType,
  parsePostId,
  unknownPost,
  type LikeState,
} from '../../domain/posts/engagement-rules.js';

export interface LikeChange extends LikeState {
  /** The post liked or unliked (parsed from the request). */
  postId: string;
  /** False when the like already was in the asked state (nothing written, no live update). */
  changed: boolean;
}

/**
 * Likes and unlikes a post: free (no ledger movement, nothing on chain) and idempotent. The like
 * row and its 'post.liked' / 'post.unliked' event commit together, and the event is written only
 * when the state changed, so repeating a like adds no engagement to analytics. Liking one's own
 * post is allowed (the spec is silent); the creator fund's anti-sybil rules discount it.
 */
export async function setLike(
  deps: { db: Db; changes: Pick<ChangeSignals, 'changed'> },
  accountId: string,
  rawPostId: unknown,
  liked: boolean,
): Promise<LikeChange> {
  const postId = parsePostId(rawPostId);
  const change = await deps.db.transaction().execute(async (trx) => {
    const post = await trx.selectFrom('posts').select('id').where('id', '=', postId).executeTakeFirst();
    if (!post) throw unknownPost(postId);
    const changed = liked
      ? await trx
          .insertInto('likes')
          .values({ account_id: accountId, post_id: postId })
          .onConflict((oc) => oc.columns(['account_id', 'post_id']).doNothing())
          .returning('post_id')
          .executeTakeFirst()
      : await trx
          .deleteFrom('likes')
          .where('account_id', '=', accountId)
          .where('post_id', '=', postId)
          .returning('post_id')
          .executeTakeFirst();
    if (changed) {
      await trx
        .insertInto('domain_events')
        .values({ type: likeEventType(liked), actor_id: accountId, post_id: postId })
        .execute();
    }
    return { liked, likeCount: await likeCount(trx, postId), postId, changed: changed !== undefined };
  });
  if (change.changed) deps.changes.changed(postKey(postId)); // its like count
  return change;
}

/** The post's stored like count, as this transaction's like or unlike left it (a trigger keeps it). */
async function likeCount(trx: Transaction<Database>, postId: string): Promise<number> {
  const { like_count } = await trx
    .selectFrom('posts')
    .select('like_count')
    .where('id', '=', postId)
    .executeTakeFirstOrThrow();
  return like_count;
}
