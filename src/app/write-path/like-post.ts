import { sql } from 'kysely';
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
 *
 * The change is one statement (the post's check, the row and the event in data-modifying CTEs),
 * not a transaction of four: under hundreds of likes a second a transaction held a pool connection
 * for every round trip between its statements, and the reads waited behind them. The count is
 * read after the commit, as the likes trigger left it (concurrent likes included).
 */
export async function setLike(
  deps: { db: Db; changes: Pick<ChangeSignals, 'changed'> },
  accountId: string,
  rawPostId: unknown,
  liked: boolean,
): Promise<LikeChange> {
  const postId = parsePostId(rawPostId);
  const event = likeEventType(liked);
  const change = liked
    ? sql<{ found: boolean; changed: boolean }>`
        WITH post AS (SELECT id FROM posts WHERE id = ${postId}),
        changed AS (
          INSERT INTO likes (account_id, post_id) SELECT ${accountId}, id FROM post
          ON CONFLICT (account_id, post_id) DO NOTHING
          RETURNING post_id),
        event AS (
          INSERT INTO domain_events (type, actor_id, post_id) SELECT ${event}, ${accountId}, post_id FROM changed)
        SELECT EXISTS (SELECT 1 FROM post) AS found, EXISTS (SELECT 1 FROM changed) AS changed`
    : sql<{ found: boolean; changed: boolean }>`
        WITH post AS (SELECT id FROM posts WHERE id = ${postId}),
        changed AS (
          DELETE FROM likes WHERE account_id = ${accountId} AND post_id IN (SELECT id FROM post)
          RETURNING post_id),
        event AS (
          INSERT INTO domain_events (type, actor_id, post_id) SELECT ${event}, ${accountId}, post_id FROM changed)
        SELECT EXISTS (SELECT 1 FROM post) AS found, EXISTS (SELECT 1 FROM changed) AS changed`;
  const [row] = (await change.execute(deps.db)).rows;
  if (!row?.found) throw unknownPost(postId);
  if (row.changed) deps.changes.changed(postKey(postId)); // its like count
  const { like_count } = await deps.db
    .selectFrom('posts')
    .select('like_count')
    .where('id', '=', postId)
    .executeTakeFirstOrThrow();
  return { liked, likeCount: like_count, postId, changed: row.changed };
}
