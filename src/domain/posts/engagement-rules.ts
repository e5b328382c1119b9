import { AppError } from '../errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The `{id}` of /posts/{id}/repost and /posts/{id}/like. Anything that is not a UUID names no
 * post, so it is 404 like an unknown UUID (not 400): the caller asked for a post that does not
 * exist, and Postgres is never handed a value its uuid type would refuse.
 */
export function parsePostId(raw: unknown): string {
  if (typeof raw !== 'string' || !UUID.test(raw)) {
    throw new AppError('not_found', `No post ${typeof raw === 'string' ? raw.slice(0, 64) : ''}`.trim());
  }
  return raw.toLowerCase();
}

export function unknownPost(postId: string): AppError {
  return new AppError('not_found', `No post ${postId}`);
}

/** One repost of a post per account; a second is refused before anything is signed or charged. */
export function alreadyReposted(postId: string): AppError {
  return new AppError('conflict', `You already reposted post ${postId}`);
}

/** The state a like or unlike leaves behind (both are idempotent). */
export interface LikeState {
  liked: boolean;
  /** Likes of the post, this one included, after the change. */
  likeCount: number;
}

/** The domain event of a like or unlike, written only when the state actually changed. */
export function likeEventType(liked: boolean): 'post.liked' | 'post.unliked' {
  return liked ? 'post.liked' : 'post.unliked';
}
