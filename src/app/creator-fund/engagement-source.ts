import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  engagersPaymentStates,
  openTransactionsAndUnshippedEvents,
  paidEngagementInFlightOrFailed,
} from '../../adapters/postgres/epoch-engagement.repository.js';
import type { EngagementCounts, EpochWindow } from '../../domain/payouts/creator-fund-rules.js';

/**
 * Where an epoch's engagement comes from: ClickHouse's `post_engagement` (the domain events the
 * shipper copies from Postgres, re-keyed by the engaged post) joined to the author of each post
 * (the actor of its `post.created` / `post.replied` / `post.quoted` event). Weights, the cap and
 * self-engagement are the domain's (scoreAuthors); this query only counts, per (author, engager):
 *
 * - replies, quotes and reposts received in [start, end): each one counts (each cost $1);
 * - likes: a like counts in the epoch where the engager's likes minus unlikes of that post inside
 *   the epoch come to +1 (it stands at the epoch's end) and only if the engager never liked that
 *   post before the epoch. So a like then an unlike in the same epoch counts nothing, and an
 *   unlike/like cycle never pays a second time. An unlike in a later epoch does not claw back a
 *   payout already made (it lowers nothing below zero: past epochs are final). Whose likes count
 *   at all (accounts that paid for something) is decided after this query (payingEngagers).
 *
 * Every read uses FINAL: a batch the shipper shipped twice must not count twice. `unpaid` are the
 * events of paid engagement whose payment failed on chain (refunded: see unpaidEngagement); they
 * count nothing.
 */
export async function epochEngagement(
  ch: ClickHouse,
  epoch: EpochWindow,
  unpaid: readonly string[] = [],
): Promise<EngagementCounts[]> {
  const engagement = ch.table('post_engagement');
  const events = ch.table('domain_events');
  const result = await ch.client.query({
    query: `
      WITH pairs AS (
        -- Every (post, engager) with engagement inside the epoch; their history decides the likes.
        SELECT DISTINCT post_id, assumeNotNull(actor_id) AS engager_id
          FROM ${engagement} FINAL
         WHERE occurred_at >= {start:DateTime64(3, 'UTC')} AND occurred_at < {end:DateTime64(3, 'UTC')}
           AND actor_id IS NOT NULL
           AND event_id NOT IN {unpaid:Array(UUID)}
      ),
      per_post AS (
        SELECT post_id, assumeNotNull(actor_id) AS engager_id,
               toInt64(
                 sumIf(delta, type IN ('post.liked', 'post.unliked') AND occurred_at >= {start:DateTime64(3, 'UTC')}) = 1
                 AND countIf(type = 'post.liked' AND occurred_at < {start:DateTime64(3, 'UTC')}) = 0
               ) AS likes,
               toInt64(countIf(type = 'post.replied' AND occurred_at >= {start:DateTime64(3, 'UTC')})) AS replies,
               toInt64(countIf(type = 'post.quoted' AND occurred_at >= {start:DateTime64(3, 'UTC')})) AS quotes,
               toInt64(countIf(type = 'post.reposted' AND occurred_at >= {start:DateTime64(3, 'UTC')})) AS reposts
          FROM ${engagement} FINAL
         WHERE occurred_at < {end:DateTime64(3, 'UTC')}
           AND actor_id IS NOT NULL
           AND event_id NOT IN {unpaid:Array(UUID)}
           AND post_id IN (SELECT post_id FROM pairs)
           AND (post_id, assumeNotNull(actor_id)) IN (SELECT post_id, engager_id FROM pairs)
         GROUP BY post_id, engager_id
      ),
      authors AS (
        SELECT assumeNotNull(post_id) AS post_id, any(assumeNotNull(actor_id)) AS author_id
          FROM ${events} FINAL
         WHERE type IN ('post.created', 'post.replied', 'post.quoted')
           AND post_id IS NOT NULL AND actor_id IS NOT NULL
           AND assumeNotNull(post_id) IN (SELECT post_id FROM pairs)
         GROUP BY post_id
      )
      SELECT toString(a.author_id) AS author_id, toString(p.engager_id) AS engager_id,
             toString(sum(p.likes)) AS likes, toString(sum(p.replies)) AS replies,
             toString(sum(p.quotes)) AS quotes, toString(sum(p.reposts)) AS reposts
        FROM per_post p
        INNER JOIN authors a ON a.post_id = p.post_id
       WHERE a.author_id != p.engager_id
       GROUP BY a.author_id, p.engager_id
      HAVING sum(p.likes) + sum(p.replies) + sum(p.quotes) + sum(p.reposts) > 0
       ORDER BY author_id, engager_id`,
    query_params: { start: epoch.start.getTime() / 1000, end: epoch.end.getTime() / 1000, unpaid },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{
    author_id: string;
    engager_id: string;
    likes: string;
    replies: string;
    quotes: string;
    reposts: string;
  }>();
  return rows.map((row) => ({
    authorId: row.author_id,
    engagerId: row.engager_id,
    likes: Number(row.likes),
    replies: Number(row.replies),
    quotes: Number(row.quotes),
    reposts: Number(row.reposts),
  }));
}

/**
 * The paid engagement (replies, quotes, reposts) of the epoch as the chain settled it: the event ids
 * whose payment failed on chain (refunded, so it must not earn its target's author anything), and
 * how many payments are still unsettled (the epoch waits for them: one may yet fail).
 */
export async function unpaidEngagement(
  db: Db,
  epoch: EpochWindow,
): Promise<{ failedEventIds: string[]; unsettled: number }> {
  const rows = await paidEngagementInFlightOrFailed(db, epoch);
  return {
    failedEventIds: rows.filter((r) => r.status === 'failed').map((r) => r.id),
    unsettled: rows.filter((r) => r.status !== 'failed').length,
  };
}

/**
 * Which of `engagerIds` have paid for something before `end` (the rule of likesFromPayingEngagers):
 * at least one post, reply, quote or repost created before `end` whose payment is settled on chain
 * (confirmed or finalized; a failed, refunded one does not count). `unsettled` counts those with
 * no settled payment but one still in flight: the epoch waits for them, as for its own paid
 * engagement, so the plan does not depend on when it ran.
 *
 * One statement whatever the number of engagers (an array parameter, not a list of values), each
 * engager answered by index lookups (posts_by_author, reposts' unique (reposter_id, post_id)).
 */
export async function payingEngagers(
  db: Db,
  engagerIds: readonly string[],
  end: Date,
): Promise<{ paying: Set<string>; unsettled: number }> {
  if (engagerIds.length === 0) return { paying: new Set(), unsettled: 0 };
  const rows = await engagersPaymentStates(db, engagerIds, end);
  return {
    paying: new Set(rows.filter((r) => r.settled).map((r) => r.id)),
    unsettled: rows.filter((r) => !r.settled && r.in_flight).length,
  };
}

/**
 * Whether ClickHouse holds every domain event of the epoch, i.e. the event shipper has shipped
 * every event that happened before `end`. An event's `occurred_at` is its transaction's start
 * (`now()`), and it becomes visible at commit, in any order; so two facts are needed:
 *
 * 1. no transaction of this database that began before `end` is still open (it could still commit
 *    an event dated before `end`); and then
 * 2. no committed event dated before `end` lies after the shipper's cursor.
 *
 * Client backends only: autovacuum workers write no events. Reading pg_stat_activity of other
 * sessions needs the `pg_read_all_stats` role (or a superuser); without it their `xact_start`
 * reads NULL and (1) would pass too early: a deployment requirement, documented in docs/money.md (creator fund).
 */
export async function eventsShippedThrough(db: Db, end: Date): Promise<boolean> {
  const row = await openTransactionsAndUnshippedEvents(db, end);
  if (!row || row.now < end) return false;
  return row.open === '0' && row.unshipped === '0';
}
