import type { AccountStore } from '../accounts/accounts.service.js';
import { findByHandle } from '../accounts/accounts.service.js';
import type { Account } from '../accounts/account.js';
import { AppError } from '../errors.js';
import type { PagePosition } from '../posts/post-read-model.js';
// The position cursors of the post lists: a (time, uuid) keyset signed per list, validated.
import { decodePosition, encodePosition } from '../posts/read-cursors.js';

export interface FollowStore {
  /** Idempotent: following twice leaves one follow. */
  follow(followerId: string, followeeId: string): Promise<void>;
  unfollow(followerId: string, followeeId: string): Promise<void>;
  /**
   * At most `limit` rows, newest follow first, keyset-paged on (follow time, listed account id)
   * strictly after `after`; each row carries its own position.
   */
  followers(accountId: string, query: FollowQuery): Promise<FollowRow[]>;
  following(accountId: string, query: FollowQuery): Promise<FollowRow[]>;
}

export interface FollowQuery {
  limit: number;
  after?: PagePosition;
}

/**
 * A listed account and where it stands in the list: `at` is the follow's time exactly as Postgres
 * holds it (to the microsecond: a Date would repeat or skip follows made in the same millisecond
 * on a page boundary), `id` the listed account's.
 */
export interface FollowRow {
  account: Account;
  position: PagePosition;
}

export interface PageRequest {
  first: number;
  /** A cursor from a previous page of the same list, unchanged. */
  after?: string;
}

/** A page of edges, each with its own cursor (the GraphQL connection's shape). */
export interface EdgePage<T> {
  items: Array<{ node: T; cursor: string }>;
  hasNextPage: boolean;
}

/**
 * Cursor scope of one account's followers or following: a cursor only pages the list it came
 * from (another account's, or the other side, is a 400).
 */
export function followListScope(side: 'followers' | 'following', accountId: string): string {
  return `${side}:${accountId}`;
}

/**
 * One page of an account's followers or following. The cursor is signed (`signed-cursor.ts`) and
 * its values validated, so a crafted, tampered or foreign `after` is AppError('invalid_request')
 * naming `after`, never a value handed to Postgres.
 */
export async function listFollows(
  deps: { follows: FollowStore; cursorSecret: string },
  side: 'followers' | 'following',
  accountId: string,
  page: PageRequest,
): Promise<EdgePage<Account>> {
  const scope = followListScope(side, accountId);
  const after =
    page.after === undefined ? undefined : decodePosition(deps.cursorSecret, scope, page.after, 'after');
  const rows = await deps.follows[side](accountId, { limit: page.first + 1, ...(after ? { after } : {}) });
  return {
    items: rows.slice(0, page.first).map((row) => ({
      node: row.account,
      cursor: encodePosition(deps.cursorSecret, scope, row.position),
    })),
    hasNextPage: rows.length > page.first,
  };
}

export async function follow(
  deps: { accounts: AccountStore; follows: FollowStore },
  followerId: string,
  handle: string,
): Promise<{ followed: true; account: Account }> {
  const target = await findByHandle(deps.accounts, handle);
  if (target.id === followerId) throw new AppError('invalid_request', 'You cannot follow yourself');
  await deps.follows.follow(followerId, target.id);
  return { followed: true, account: target };
}

export async function unfollow(
  deps: { accounts: AccountStore; follows: FollowStore },
  followerId: string,
  handle: string,
): Promise<{ followed: false; account: Account }> {
  const target = await findByHandle(deps.accounts, handle);
  await deps.follows.unfollow(followerId, target.id);
  return { followed: false, account: target };
}
