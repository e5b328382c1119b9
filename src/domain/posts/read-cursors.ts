import { AppError } from '../errors.js';
import { isExactInstant } from '../ledger/history-cursor.js';
import { decodeSignedCursor, encodeSignedCursor } from '../pagination/signed-cursor.js';
import type { PagePosition } from './post-read-model.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Cursor scope of the global latest feed: a cursor of another listing is refused here. */
export const LATEST_FEED_SCOPE = 'feed:latest';

/** Cursor scope of one account's timeline: a cursor only pages the timeline it came from. */
export function timelineScope(accountId: string): string {
  return `timeline:${accountId}`;
}

/** Cursor scope of one post's replies: a cursor only pages the thread it came from. */
export function repliesScope(postId: string): string {
  return `replies:${postId}`;
}

export function encodePosition(secret: string, scope: string, position: PagePosition): string {
  return encodeSignedCursor(secret, scope, [position.at, position.id]);
}

/**
 * The position a cursor names, validated even when signed (the secret may be a public default):
 * anything else is AppError('invalid_request'), never a value handed to Postgres.
 */
export function decodePosition(
  secret: string,
  scope: string,
  cursor: string,
  field = 'cursor',
): PagePosition {
  const values = decodeSignedCursor(secret, scope, cursor, field);
  const [at, id] = values;
  if (
    values.length !== 2 ||
    typeof at !== 'string' ||
    typeof id !== 'string' ||
    !isExactInstant(at) ||
    !UUID.test(id)
  ) {
    throw new AppError(
      'invalid_request',
      `${field} is not valid: pass a cursor from a previous page unchanged`,
      {
        field,
      },
    );
  }
  return { at, id };
}

export type FeedSort = 'trending' | 'latest';

/** `sort` of GET /feed: trending unless asked; anything but the two names is a 400. */
export function parseFeedSort(raw: unknown, field = 'sort'): FeedSort {
  if (raw === undefined || raw === null || raw === 'trending') return 'trending';
  if (raw === 'latest') return 'latest';
  throw new AppError('invalid_request', `${field} must be one of: trending, latest`, { field });
}
