import type { EdgePage, FollowStore, PageRequest } from '../../domain/follows/follows.service.js';
import type { Account } from '../../domain/accounts/account.js';
import { toAccount } from './accounts.repository.js';
import type { Db } from './db.js';

/** Cursor of a follow list: the follow's time and the other account's id, base64url JSON. */
function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url');
}

function decodeCursor(cursor: string): [Date, string] | undefined {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(at);
    return Number.isNaN(date.getTime()) || typeof id !== 'string' ? undefined : [date, id];
  } catch {
    return undefined;
  }
}

export function createFollowStore(db: Db): FollowStore {
  const list = async (
    side: 'followers' | 'following',
    accountId: string,
    page: PageRequest,
  ): Promise<EdgePage<Account>> => {
    const [mine, theirs] =
      side === 'followers'
        ? (['followee_id', 'follower_id'] as const)
        : (['follower_id', 'followee_id'] as const);
    let query = db
      .selectFrom('follows')
      .innerJoin('accounts', 'accounts.id', `follows.${theirs}`)
      .selectAll('accounts')
      .select('follows.created_at as followed_at')
      .where(`follows.${mine}`, '=', accountId)
      .orderBy('follows.created_at', 'desc')
      .orderBy('accounts.id', 'desc')
      .limit(page.first + 1);
    const after = page.after ? decodeCursor(page.after) : undefined;
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('follows.created_at', '<', after[0]),
          eb.and([eb('follows.created_at', '=', after[0]), eb('accounts.id', '<', after[1])]),
        ]),
      );
    }
    const rows = await query.execute();
    return {
      items: rows
        .slice(0, page.first)
        .map((row) => ({ node: toAccount(row), cursor: encodeCursor(row.followed_at, row.id) })),
      hasNextPage: rows.length > page.first,
    };
  };
  return {
    follow: async (followerId, followeeId) => {
      await db
        .insertInto('follows')
        .values({ follower_id: followerId, followee_id: followeeId })
        .onConflict((oc) => oc.columns(['follower_id', 'followee_id']).doNothing())
        .execute();
    },
    unfollow: async (followerId, followeeId) => {
      await db
        .deleteFrom('follows')
        .where('follower_id', '=', followerId)
        .where('followee_id', '=', followeeId)
        .execute();
    },
    followers: (accountId, page) => list('followers', accountId, page),
    following: (accountId, page) => list('following', accountId, page),
  };
}
