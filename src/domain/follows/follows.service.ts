import type { AccountStore } from '../accounts/accounts.service.js';
import { findByHandle } from '../accounts/accounts.service.js';
import type { Account } from '../accounts/account.js';
import { AppError } from '../errors.js';

export interface FollowStore {
  /** Idempotent: following twice leaves one follow. */
  follow(followerId: string, followeeId: string): Promise<void>;
  unfollow(followerId: string, followeeId: string): Promise<void>;
  /** Newest first, keyset-paged on (created_at, id). */
  followers(accountId: string, page: PageRequest): Promise<EdgePage<Account>>;
  following(accountId: string, page: PageRequest): Promise<EdgePage<Account>>;
}

export interface PageRequest {
  first: number;
  after?: string;
}

/** A page of edges, each with its own cursor (the GraphQL connection's shape). */
export interface EdgePage<T> {
  items: Array<{ node: T; cursor: string }>;
  hasNextPage: boolean;
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
