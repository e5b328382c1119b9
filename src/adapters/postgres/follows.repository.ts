import { sql } from 'kysely';
import type { FollowQuery, FollowRow, FollowStore } from '../../domain/follows/follows.service.js';
import { toAccount } from './accounts.repository.js';
import type { Db } from './db.js';

export function createFollowStore(db: Db): FollowStore {
  const list = async (
    side: 'followers' | 'following',
    accountId: string,
    { limit, after }: FollowQuery,
  ): Promise<FollowRow[]> => {
    const [mine, theirs] =
      side === 'followers'
        ? (['followee_id', 'follower_id'] as const)
        : (['follower_id', 'followee_id'] as const);
    let query = db
      .selectFrom('follows')
      .innerJoin('accounts', 'accounts.id', `follows.${theirs}`)
      .selectAll('accounts')
      // The exact text, microseconds kept: the next page starts strictly after it.
      .select(
        sql<string>`to_char(follows.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(
          'followed_at_exact',
        ),
      )
      .where(`follows.${mine}`, '=', accountId)
      .orderBy('follows.created_at', 'desc')
      .orderBy('accounts.id', 'desc')
      .limit(limit);
    if (after) {
      // The service validated both values (an exact instant, a UUID) before they reach the casts.
      query = query.where(
        sql<boolean>`(follows.created_at, accounts.id) < (${after.at}::timestamptz, ${after.id}::uuid)`,
      );
    }
    const rows = await query.execute();
    return rows.map((row) => ({
      account: toAccount(row),
      position: { at: row.followed_at_exact, id: row.id },
    }));
  };
  return {
    // The follow and the followee's `follow.created` in one statement: both commit or neither. A
    // follow that already existed inserts nothing and tells nothing; an unfollow and a follow again
    // stages a second event under the same dedupe key, which the sequencer drops (told once).
    follow: async (followerId, followeeId) => {
      await db
        .with('followed', (w) =>
          w
            .insertInto('follows')
            .values({ follower_id: followerId, followee_id: followeeId })
            .onConflict((oc) => oc.columns(['follower_id', 'followee_id']).doNothing())
            .returning(['follower_id', 'followee_id']),
        )
        .insertInto('event_staging')
        .columns(['account_id', 'type', 'data', 'dedupe_key'])
        .expression((eb) =>
          eb
            .selectFrom('followed')
            .innerJoin('accounts', 'accounts.id', 'followed.follower_id')
            .select([
              'followed.followee_id',
              sql.lit('follow.created').as('type'),
              sql<unknown>`jsonb_build_object('by', accounts.handle)`.as('data'),
              sql<string>`'follow.created:' || followed.follower_id`.as('dedupe_key'),
            ]),
        )
        .execute();
    },
    unfollow: async (followerId, followeeId) => {
      await db
        .deleteFrom('follows')
        .where('follower_id', '=', followerId)
        .where('followee_id', '=', followeeId)
        .execute();
    },
    followers: (accountId, query) => list('followers', accountId, query),
    following: (accountId, query) => list('following', accountId, query),
  };
}
