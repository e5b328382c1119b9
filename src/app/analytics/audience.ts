import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import { handlesOf, newFollowerCount } from '../../adapters/postgres/audience.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import { requireTimeRange } from '../../domain/analytics/time-range.js';
import { requireOwnerOrFinance } from '../../domain/auth/access-rules.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';

/*
 * A creator's audience over [from, to) (GraphQL `audience`, REST GET /me/audience; issue 51):
 *
 *   uniqueEngagers  distinct accounts with a like, reply, quote or repost on any of the creator's
 *                   posts in the range (post_engagement's rows: an unlike removes no one, a paid
 *                   engagement counts even if its payment later failed). The creator's own
 *                   engagement with their posts is not counted: the audience is others.
 *   payingEngagers  distinct accounts whose replies, quotes or reposts on the creator's posts paid
 *                   the creator something in the range, net of reversals (creator_earnings by
 *                   payer_id, sum > 0: a payment that failed on chain and was reversed pays
 *                   nothing). A self-engagement pays its author nothing, so never counts here.
 *   newFollowers    accounts following the creator now whose follow began in the range, from
 *                   Postgres `follows`: follows are not domain events, so ClickHouse has none
 *                   (schema/clickhouse/0005, part 4). An unfollow deletes the row.
 *   topSupporters   the 20 payers with the most paid into the creator's earnings in the range
 *                   (the creator's USDC share of their replies, quotes and reposts, net of
 *                   reversals: Σ of the creator's earn legs attributed to the payer), ties broken
 *                   by handle; handles looked up in Postgres once, for those shown only.
 *
 * Cost: each ClickHouse read is one statement by key prefix, aggregated there, never per post:
 * the creator's posts from creator_posts (ORDER BY author_id, created_at, ...), their engagement
 * from post_engagement (ORDER BY post_id, ...: `post_id IN` the set uses the primary index) and the
 * payers from creator_earnings (ORDER BY creator_id, created_at, ...). Distinct counts need no FINAL
 * (a re-shipped row repeats an account already counted); sums of money use FINAL.
 *
 * ClickHouse trails Postgres by the event shipper's few seconds; follows are read from Postgres
 * now. Legs shipped before schema/clickhouse/0005 carry no payer until `cli reindex`.
 */

/** The widest range one audience read may ask for: as the daily earnings series. */
export const MAX_AUDIENCE_RANGE_DAYS = 400;

/** How many supporters the audience names. */
export const TOP_SUPPORTERS = 20;

export interface Supporter {
  accountId: string;
  handle: string;
  /** Micro-USD: the creator's share of what this account paid in the range, net of reversals. */
  paidMicro: bigint;
}

export interface Audience {
  uniqueEngagers: number;
  payingEngagers: number;
  newFollowers: number;
  /** Most paid first, then by handle; at most TOP_SUPPORTERS. */
  topSupporters: Supporter[];
}

export interface AudienceDeps {
  accounts: Pick<AccountStore, 'byHandle'>;
  clickhouse: ClickHouse;
  db: Db;
}

/** The audience of @handle as `viewer` may read it: own handle, or finance/admin for any. */
export async function audienceFor(
  deps: AudienceDeps,
  viewer: Viewer,
  query: { handle: string; from: Date; to: Date },
): Promise<Audience> {
  const creator = await deps.accounts.byHandle(query.handle);
  if (!creator) throw new AppError('not_found', `No user @${query.handle}`);
  requireOwnerOrFinance(viewer, creator.id, "An audience is its creator's (or finance's) to read");
  requireTimeRange(query.from, query.to, MAX_AUDIENCE_RANGE_DAYS);
  return creatorAudience(deps, creator.id, query.from, query.to);
}

/** The audience of account `creatorId` over [from, to); no access rule (audienceFor applies them). */
export async function creatorAudience(
  deps: Pick<AudienceDeps, 'clickhouse' | 'db'>,
  creatorId: string,
  from: Date,
  to: Date,
): Promise<Audience> {
  const range = { creator: creatorId, from: from.getTime() / 1000, to: to.getTime() / 1000 };
  const [uniqueEngagers, payers, newFollowers] = await Promise.all([
    engagerCount(deps.clickhouse, range),
    topPayers(deps.clickhouse, range),
    newFollowerCount(deps.db, creatorId, from, to),
  ]);
  return {
    uniqueEngagers,
    payingEngagers: payers.paying,
    newFollowers,
    topSupporters: await namedSupporters(deps.db, payers.top),
  };
}

type RangeParams = {
  creator: string;
  /** Unix seconds (fractional: milliseconds kept). */
  from: number;
  to: number;
};

async function engagerCount(ch: ClickHouse, range: RangeParams): Promise<number> {
  const result = await ch.client.query({
    query: `SELECT toString(uniqExact(actor_id)) AS engagers
              FROM ${ch.table('post_engagement')}
             WHERE post_id IN (SELECT post_id FROM ${ch.table('creator_posts')}
                                WHERE author_id = {creator:UUID}
                                  AND created_at < {to:DateTime64(3, 'UTC')})
               AND occurred_at >= {from:DateTime64(3, 'UTC')} AND occurred_at < {to:DateTime64(3, 'UTC')}
               AND type IN ('post.liked', 'post.replied', 'post.quoted', 'post.reposted')
               AND actor_id IS NOT NULL AND actor_id != {creator:UUID}`,
    query_params: range,
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ engagers: string }>();
  return Number(row?.engagers ?? 0);
}

/**
 * Every payer's net share paid into the creator's earnings in the range, aggregated in ClickHouse;
 * what comes back is how many paid (> 0) and the first TOP_SUPPORTERS by amount WITH TIES (everyone
 * tied with the last of them, so the tie can be broken by handle, which ClickHouse does not hold).
 */
async function topPayers(
  ch: ClickHouse,
  range: RangeParams,
): Promise<{ paying: number; top: Array<{ accountId: string; paidMicro: bigint }> }> {
  const result = await ch.client.query({
    query: `SELECT toString(payer) AS payer_text, toString(paid) AS paid_text, toString(count() OVER ()) AS paying
              FROM (SELECT assumeNotNull(payer_id) AS payer, sum(amount) AS paid
                      FROM ${ch.table('creator_earnings')} FINAL
                     WHERE creator_id = {creator:UUID}
                       AND created_at >= {from:DateTime64(3, 'UTC')} AND created_at < {to:DateTime64(3, 'UTC')}
                       AND payer_id IS NOT NULL AND payer_id != {creator:UUID}
                     GROUP BY payer
                    HAVING paid > 0)
             ORDER BY paid DESC
             LIMIT {top:UInt32} WITH TIES`,
    query_params: { ...range, top: TOP_SUPPORTERS },
    format: 'JSONEachRow',
  });
  // Output aliases differ from the inner columns: ORDER BY paid must sort the Int64, not its text.
  const rows = await result.json<{ payer_text: string; paid_text: string; paying: string }>();
  return {
    paying: Number(rows[0]?.paying ?? 0),
    top: rows.map((row) => ({ accountId: row.payer_text, paidMicro: BigInt(row.paid_text) })),
  };
}

/**
 * The supporters shown: `top` is most paid first, with everyone tied at the last place. Those above
 * the tie are named by id; of the tied, only as many as fit, first by handle (one statement).
 */
async function namedSupporters(
  db: Db,
  top: ReadonlyArray<{ accountId: string; paidMicro: bigint }>,
): Promise<Supporter[]> {
  if (top.length === 0) return [];
  const last = top.length > TOP_SUPPORTERS ? top[TOP_SUPPORTERS - 1]!.paidMicro : undefined;
  const above = last === undefined ? top : top.filter((p) => p.paidMicro > last);
  const tied = last === undefined ? [] : top.filter((p) => p.paidMicro === last);
  const handles = await handlesOf(
    db,
    above.map((p) => p.accountId),
    tied.map((p) => p.accountId),
    TOP_SUPPORTERS - above.length,
  );
  const paidOf = new Map(top.map((p) => [p.accountId, p.paidMicro]));
  return handles
    .map((row) => ({ accountId: row.id, handle: row.handle, paidMicro: paidOf.get(row.id) ?? 0n }))
    .sort(
      (a, b) =>
        (a.paidMicro < b.paidMicro ? 1 : a.paidMicro > b.paidMicro ? -1 : 0) ||
        (a.handle < b.handle ? -1 : a.handle > b.handle ? 1 : 0),
    )
    .slice(0, TOP_SUPPORTERS);
}
