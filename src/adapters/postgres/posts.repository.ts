import type { RawBuilder } from 'kysely';
import type { PostType } from '../../domain/posts/post-rules.js';
import type { Db } from './db.js';
import type { Tx } from './tx.js';

/** The author of post `postId` and their custodial wallet address, if the post exists. */
export async function postAuthorWallet(
  db: Db,
  postId: string,
): Promise<{ authorId: string; authorWallet: string | null } | undefined> {
  return db
    .selectFrom('posts')
    .innerJoin('accounts', 'accounts.id', 'posts.author_id')
    .select(['accounts.id as authorId', 'accounts.wallet_address as authorWallet'])
    .where('posts.id', '=', postId)
    .executeTakeFirst();
}

/**
 * The posts row's INSERT ... RETURNING created_at, for commitPaidWrite's one statement:
 * `movementId` is the SQL expression of the movement that statement records.
 */
export function insertPost(
  db: Db,
  post: {
    id: string;
    authorId: string;
    type: PostType;
    content: string;
    parentId: string | null;
    quotedPostId: string | null;
  },
  movementId: RawBuilder<string>,
) {
  return db
    .insertInto('posts')
    .values({
      id: post.id,
      author_id: post.authorId,
      type: post.type,
      content: post.content,
      parent_id: post.parentId,
      quoted_post_id: post.quotedPostId,
      movement_id: movementId,
    })
    .returning('created_at');
}

/** Post `postId` as committed, with its movement. Throws when absent. */
export async function committedPostRow(db: Db, postId: string) {
  return db
    .selectFrom('posts')
    .select([
      'id',
      'type',
      'content',
      'author_id',
      'parent_id',
      'quoted_post_id',
      'created_at',
      'movement_id',
    ])
    .where('id', '=', postId)
    .executeTakeFirstOrThrow();
}

/**
 * What movement `movementId` paid for that reads show: its post, or its repost (each undefined
 * when it paid for neither: a send, a swap, a payout). Read in the transaction that reverses it.
 */
export async function paidContentOfMovement(tx: Tx, movementId: string) {
  const post = await tx
    .selectFrom('posts')
    .select(['id', 'author_id', 'parent_id', 'quoted_post_id'])
    .where('movement_id', '=', movementId)
    .executeTakeFirst();
  const repost = await tx
    .selectFrom('reposts')
    .select(['post_id', 'reposter_id'])
    .where('movement_id', '=', movementId)
    .executeTakeFirst();
  return { post, repost };
}
