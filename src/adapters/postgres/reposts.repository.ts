import type { Db } from './db.js';
import type { Tx } from './tx.js';

/** The account's repost of the post, with the status of its payment's outbox row. */
export async function existingRepost(db: Db, reposterId: string, postId: string) {
  return db
    .selectFrom('reposts')
    .innerJoin('chain_transactions', 'chain_transactions.movement_id', 'reposts.movement_id')
    .select(['reposts.id', 'chain_transactions.status'])
    .where('reposts.reposter_id', '=', reposterId)
    .where('reposts.post_id', '=', postId)
    .executeTakeFirst();
}

export async function deleteRepost(tx: Tx, repostId: string): Promise<void> {
  await tx.deleteFrom('reposts').where('id', '=', repostId).execute();
}

/** Fails with the UNIQUE violation `reposts_once_per_account` when the account reposted the post already. */
export async function insertRepost(
  tx: Tx,
  repost: { id: string; reposterId: string; postId: string; movementId: string },
): Promise<void> {
  await tx
    .insertInto('reposts')
    .values({
      id: repost.id,
      reposter_id: repost.reposterId,
      post_id: repost.postId,
      movement_id: repost.movementId,
    })
    .execute();
}

/** Repost `repostId` as committed, with its movement, if it exists. */
export async function committedRepostRow(db: Db, repostId: string) {
  return db
    .selectFrom('reposts')
    .select(['id', 'reposter_id', 'post_id', 'movement_id'])
    .where('id', '=', repostId)
    .executeTakeFirst();
}
