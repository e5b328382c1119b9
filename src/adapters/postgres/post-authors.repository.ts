import type { Db } from './db.js';

/** The author of post `postId`, or undefined when there is no such post. `postId` must be a UUID. */
export async function postAuthorId(db: Db, postId: string): Promise<string | undefined> {
  const post = await db.selectFrom('posts').select('author_id').where('id', '=', postId).executeTakeFirst();
  return post?.author_id;
}
