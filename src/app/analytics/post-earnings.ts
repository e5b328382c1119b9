import { localBucketStart } from './local-buckets.js';
import { requireEarningsRange, type EarningsGranularity } from '../../domain/analytics/earnings-period.js';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import { postAuthorId } from '../../adapters/postgres/post-authors.repository.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import { requireTimeRange } from '../../domain/analytics/time-range.js';
import { requireOwnerOrFinance } from '../../domain/auth/access-rules.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { decodeSignedCursor, encodeSignedCursor } from '../../domain/pagination/signed-cursor.js';
import type { PostView } from '../../domain/posts/post-read-model.js';
import { parseTimezone } from '../../domain/reports/report-request.js';
import { hydratePosts } from '../feed/post-reads.js';

/*
 * Every post's earnings and engagement over a range (postEarnings, GET /me/posts/earnings) and one
 * post's over time (postStats with a range). Read from ClickHouse (schema/clickhouse/0005):
 *   creator_posts      every post of the author (ORDER BY author_id, created_at, post_id)
 *   creator_earnings   the author's earned USDC legs, each with the post engaged with (post_id)
 *   post_engagement    likes (+1/-1), replies, quotes, reposts per post (ORDER BY post_id, ...)
 * Each read is one statement whatever the number of posts: the author's posts by key prefix, the
 * earnings by creator_id prefix, the engagement of those posts only (post_id IN the author's
 * posts), aggregated per post, then sorted and cut to the page inside ClickHouse. All three tables
 * are ReplacingMergeTrees (re-shipped rows collapse): read with FINAL, so every sum is exact.
 */

/** The widest range of a postEarnings page. */
export const MAX_POST_EARNINGS_RANGE_DAYS = 400;

export const MAX_POST_EARNINGS_PAGE = 50;
export const DEFAULT_POST_EARNINGS_PAGE = 20;

export type PostEarningsOrder = 'earned' | 'engagement' | 'newest';

/** What a post earned its author and the engagement it had, over a range (or its lifetime). */
export interface PostActivity {
  /** The author's USDC share of the replies, quotes and reposts paid on the post, net of reversals. */
  earnedMicro: bigint;
  /** Likes minus unlikes. */
  likes: number;
  replies: number;
  quotes: number;
  reposts: number;
}

export interface PostEarningsRow extends PostActivity {
  postId: string;
  /** 'post' | 'reply' | 'quote'. */
  kind: string;
  createdAt: Date;
}

export interface PostEarningsPage {
  rows: PostEarningsRow[];
  hasMore: boolean;
  /** The cursor of the page's last row, when more follow. */
  nextCursor?: string;
}

export interface PostActivityBucket extends PostActivity {
  /** Start of the hour, day, week (Monday) or month in the asked zone, as a UTC instant. */
  bucket: Date;
}

export interface PostStatsAnswer extends PostActivity {
  /** Buckets with any activity, oldest first; absent unless a granularity was asked for. */
  series?: PostActivityBucket[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A creator's posts (not reposts) created before `to`, with what each earned and its engagement in
 * [from, to), one page in `order`; keyset-paged by signed cursor.
 *
 * Orders (each ends with newest first, then post id, so it is total and stable across pages):
 *   earned      net earnings, highest first
 *   engagement  likes + replies + quotes + reposts, highest first
 *   newest      creation time
 * Under earned and engagement, posts with no earning legs (earned) or no engagement event
 * (engagement) in the range come after every post that had some, even one whose net is 0 or below
 * (an unlike or a reversal in the range).
 */
export async function postEarningsPage(
  deps: { clickhouse: ClickHouse; cursorSecret: string },
  creatorId: string,
  query: { from: Date; to: Date; order: PostEarningsOrder; first: number; after?: string | undefined },
): Promise<PostEarningsPage> {
  const scope = cursorScope(creatorId, query);
  const after = query.after === undefined ? undefined : decodePosition(deps.cursorSecret, scope, query);
  const ch = deps.clickhouse;
  const limit = query.first + 1;
  const newest = query.order === 'newest';
  // newest: the page is cut from creator_posts itself (read in key order), and only its posts are
  // aggregated. earned/engagement: every post is aggregated, then sorted on the sums.
  const postsCut = newest
    ? `${after ? "AND (created_at, post_id) < ({aAt:DateTime64(3, 'UTC')}, {aId:UUID})" : ''}
       ORDER BY created_at DESC, post_id DESC LIMIT {limit:UInt32}`
    : '';
  const metric =
    query.order === 'earned'
      ? 'earned'
      : query.order === 'engagement'
        ? 'likes + replies + quotes + reposts'
        : '0';
  const active = query.order === 'earned' ? 'legs > 0' : query.order === 'engagement' ? 'events > 0' : '1';
  const sortCut = newest
    ? 'ORDER BY created_at DESC, post_id DESC'
    : `${after ? "WHERE (active, metric, created_at, post_id) < ({aActive:UInt8}, {aMetric:Int64}, {aAt:DateTime64(3, 'UTC')}, {aId:UUID})" : ''}
       ORDER BY active DESC, metric DESC, created_at DESC, post_id DESC LIMIT {limit:UInt32}`;
  const result = await ch.client.query({
    query: `
      WITH posts AS (
             SELECT post_id, created_at, kind
               FROM ${ch.table('creator_posts')} FINAL
              WHERE author_id = {creator:UUID} AND kind != 'repost' AND created_at < {to:DateTime64(3, 'UTC')}
              ${postsCut}
           ),
           earnings AS (
             SELECT assumeNotNull(post_id) AS post_id, sum(amount) AS earned, count() AS legs
               FROM ${ch.table('creator_earnings')} FINAL
              WHERE creator_id = {creator:UUID} AND created_at >= {from:DateTime64(3, 'UTC')}
                AND created_at < {to:DateTime64(3, 'UTC')}
                AND post_id IN (SELECT post_id FROM posts)
              GROUP BY post_id
           ),
           engagement AS (
             SELECT post_id,
                    sumIf(toInt64(delta), type IN ('post.liked', 'post.unliked')) AS likes,
                    countIf(type = 'post.replied') AS replies,
                    countIf(type = 'post.quoted') AS quotes,
                    countIf(type = 'post.reposted') AS reposts,
                    count() AS events
               FROM ${ch.table('post_engagement')} FINAL
              WHERE post_id IN (SELECT post_id FROM posts)
                AND occurred_at >= {from:DateTime64(3, 'UTC')} AND occurred_at < {to:DateTime64(3, 'UTC')}
              GROUP BY post_id
           )
      SELECT * FROM (
        SELECT p.post_id AS post_id, p.created_at AS created_at, p.kind AS kind,
               toInt64(e.earned) AS earned, e.legs AS legs,
               toInt64(g.likes) AS likes, g.replies AS replies, g.quotes AS quotes,
               g.reposts AS reposts, g.events AS events,
               toInt64(${metric}) AS metric, toUInt8(${active}) AS active
          FROM posts AS p
          LEFT JOIN earnings AS e ON e.post_id = p.post_id
          LEFT JOIN engagement AS g ON g.post_id = p.post_id
      )
      ${sortCut}
      SETTINGS join_use_nulls = 0`,
    query_params: {
      creator: creatorId,
      from: query.from.getTime() / 1000,
      to: query.to.getTime() / 1000,
      limit,
      aActive: after?.active ?? 0,
      aMetric: after?.metric ?? '0',
      aAt: (after?.createdAtMs ?? 0) / 1000,
      aId: after?.postId ?? '00000000-0000-0000-0000-000000000000',
    },
    format: 'JSONEachRow',
  });
  const raw = await result.json<PageRow>();
  const rows = raw.slice(0, query.first);
  const hasMore = raw.length > query.first;
  const last = rows.at(-1);
  return {
    rows: rows.map(toEarningsRow),
    hasMore,
    ...(hasMore && last
      ? { nextCursor: encodeSignedCursor(deps.cursorSecret, scope, positionOf(query.order, last)) }
      : {}),
  };
}

/** A row as ClickHouse writes it in JSONEachRow (64-bit integers as strings). */
interface PageRow {
  post_id: string;
  created_at: string;
  kind: string;
  earned: string;
  likes: string;
  replies: string;
  quotes: string;
  reposts: string;
  metric: string;
  active: number;
}

function toEarningsRow(row: PageRow): PostEarningsRow {
  return {
    postId: row.post_id,
    kind: row.kind,
    createdAt: clickhouseInstant(row.created_at),
    earnedMicro: BigInt(row.earned),
    likes: Number(row.likes),
    replies: Number(row.replies),
    quotes: Number(row.quotes),
    reposts: Number(row.reposts),
  };
}

/** DateTime64(3, 'UTC') as JSONEachRow prints it ('YYYY-MM-DD hh:mm:ss.sss') to a Date. */
function clickhouseInstant(text: string): Date {
  return new Date(`${text.replace(' ', 'T')}Z`);
}

/**
 * Signed into every cursor: a page's position means something only for the same creator, order and
 * range, so a cursor of another list (or of the same list over another range) is refused.
 */
function cursorScope(creatorId: string, query: { from: Date; to: Date; order: PostEarningsOrder }): string {
  return `analytics:post-earnings:${creatorId}:${query.order}:${query.from.getTime()}:${query.to.getTime()}`;
}

interface Position {
  active: number;
  /** Decimal digits of the sort sum (Int64), '0' under newest. */
  metric: string;
  createdAtMs: number;
  postId: string;
}

/** newest: [created_at ms, post id]; earned, engagement: [active 0|1, sum as digits, created_at ms, post id]. */
function positionOf(order: PostEarningsOrder, row: PageRow): unknown[] {
  const at = clickhouseInstant(row.created_at).getTime();
  return order === 'newest' ? [at, row.post_id] : [Number(row.active), row.metric, at, row.post_id];
}

const INT64 = /^-?\d{1,19}$/;

/** The position a cursor holds: its MAC first, then every value (the secret may be a public default). */
function decodePosition(
  secret: string,
  scope: string,
  query: { order: PostEarningsOrder; after?: string | undefined },
): Position {
  const values = decodeSignedCursor(secret, scope, query.after ?? '', 'cursor');
  const full = query.order === 'newest' ? [1, '0', ...values] : values;
  const [active, metric, createdAtMs, postId, ...rest] = full;
  if (
    (active === 0 || active === 1) &&
    typeof metric === 'string' &&
    INT64.test(metric) &&
    BigInt.asIntN(64, BigInt(metric)) === BigInt(metric) &&
    typeof createdAtMs === 'number' &&
    Number.isSafeInteger(createdAtMs) &&
    createdAtMs >= 0 &&
    typeof postId === 'string' &&
    UUID.test(postId) &&
    rest.length === 0
  ) {
    return { active, metric, createdAtMs, postId };
  }
  throw new AppError('invalid_request', 'cursor is not valid: pass a cursor from a previous page unchanged', {
    field: 'cursor',
  });
}

/**
 * A post's earnings and engagement: over [from, to) when a range is given, else its lifetime; with
 * `granularity`, also per hour, day, week (from Monday) or month starting at local midnight in
 * `timezone` (IANA, default UTC). Buckets with no activity are left out.
 */
export async function postActivity(
  ch: ClickHouse,
  post: { postId: string; authorId: string },
  query: { range?: { from: Date; to: Date }; granularity?: EarningsGranularity; timezone: string },
): Promise<PostStatsAnswer> {
  const inRange = (column: string) =>
    query.range
      ? `AND ${column} >= {from:DateTime64(3, 'UTC')} AND ${column} < {to:DateTime64(3, 'UTC')}`
      : '';
  const bucketOf = (column: string) =>
    query.granularity ? `toUnixTimestamp(${localBucketStart(query.granularity, column)})` : 'toUInt32(0)';
  const params = {
    post: post.postId,
    author: post.authorId,
    from: (query.range?.from.getTime() ?? 0) / 1000,
    to: (query.range?.to.getTime() ?? 0) / 1000,
    tz: query.timezone,
  };
  const [engagementResult, earningsResult] = await Promise.all([
    ch.client.query({
      query: `SELECT ${bucketOf('occurred_at')} AS bucket,
                     toString(sumIf(toInt64(delta), type IN ('post.liked', 'post.unliked'))) AS likes,
                     toString(countIf(type = 'post.replied')) AS replies,
                     toString(countIf(type = 'post.quoted')) AS quotes,
                     toString(countIf(type = 'post.reposted')) AS reposts
                FROM ${ch.table('post_engagement')} FINAL
               WHERE post_id = {post:UUID} ${inRange('occurred_at')}
               GROUP BY bucket`,
      query_params: params,
      format: 'JSONEachRow',
    }),
    ch.client.query({
      query: `SELECT ${bucketOf('created_at')} AS bucket, toString(sum(amount)) AS earned
                FROM ${ch.table('creator_earnings')} FINAL
               WHERE creator_id = {author:UUID} AND post_id = {post:UUID} ${inRange('created_at')}
               GROUP BY bucket`,
      query_params: params,
      format: 'JSONEachRow',
    }),
  ]);
  const buckets = new Map<number, PostActivity>();
  const at = (bucket: number) => {
    let activity = buckets.get(bucket);
    if (!activity) buckets.set(bucket, (activity = emptyActivity()));
    return activity;
  };
  for (const row of await engagementResult.json<Record<string, string | number>>()) {
    const activity = at(Number(row.bucket));
    activity.likes += Number(row.likes);
    activity.replies += Number(row.replies);
    activity.quotes += Number(row.quotes);
    activity.reposts += Number(row.reposts);
  }
  for (const row of await earningsResult.json<Record<string, string | number>>()) {
    at(Number(row.bucket)).earnedMicro += BigInt(row.earned!);
  }
  const total = emptyActivity();
  const series: PostActivityBucket[] = [];
  for (const [bucket, activity] of [...buckets].sort(([a], [b]) => a - b)) {
    total.earnedMicro += activity.earnedMicro;
    total.likes += activity.likes;
    total.replies += activity.replies;
    total.quotes += activity.quotes;
    total.reposts += activity.reposts;
    series.push({ bucket: new Date(bucket * 1000), ...activity });
  }
  return query.granularity ? { ...total, series } : total;
}

function emptyActivity(): PostActivity {
  return { earnedMicro: 0n, likes: 0, replies: 0, quotes: 0, reposts: 0 };
}

// --- As a viewer asks: the look-ups, the access rule and the bounds, then the read above. ---

/** postEarnings / GET /me/posts/earnings: the creator's own (finance and admin: anyone's). */
export async function postEarningsFor(
  deps: { accounts: Pick<AccountStore, 'byHandle'>; clickhouse: ClickHouse; cursorSecret: string },
  viewer: Viewer,
  query: {
    /** The creator; absent: the viewer (REST's /me). */
    handle?: string | undefined;
    from: Date;
    to: Date;
    order: PostEarningsOrder;
    first: number;
    after?: string | undefined;
  },
): Promise<PostEarningsPage> {
  let creatorId = viewer.accountId;
  if (query.handle !== undefined) {
    const creator = await deps.accounts.byHandle(query.handle);
    if (!creator) throw new AppError('not_found', `No user @${query.handle}`);
    requireOwnerOrFinance(viewer, creator.id, "A creator's post earnings are theirs (or finance's) to read");
    creatorId = creator.id;
  }
  requireTimeRange(query.from, query.to, MAX_POST_EARNINGS_RANGE_DAYS);
  return postEarningsPage(deps, creatorId, query);
}

/**
 * postStats: a post's engagement and earnings, its author's (finance and admin: any). Without a
 * range: lifetime. A granularity needs a range within creatorEarnings' bound for it
 * (EARNINGS_RANGE_LIMITS); a range alone is bounded like the widest series (months).
 */
export async function postStatsFor(
  deps: { db: Db; clickhouse: ClickHouse },
  viewer: Viewer,
  postId: string,
  query: {
    from?: Date | null | undefined;
    to?: Date | null | undefined;
    granularity?: EarningsGranularity | null | undefined;
    timezone?: string | null | undefined;
  } = {},
): Promise<PostStatsAnswer> {
  // Not a UUID: no post, and Postgres would refuse the comparison with an error.
  const authorId = UUID.test(postId) ? await postAuthorId(deps.db, postId) : undefined;
  if (authorId === undefined) throw new AppError('not_found', `No post ${postId}`);
  requireOwnerOrFinance(viewer, authorId, "A post's stats are its author's (or finance's) to read");
  if ((query.from == null) !== (query.to == null)) {
    throw new AppError('invalid_request', 'from and to go together: give both or neither', {
      field: query.from == null ? 'from' : 'to',
    });
  }
  const range = query.from != null && query.to != null ? { from: query.from, to: query.to } : undefined;
  const granularity = query.granularity ?? undefined;
  if (granularity && !range) {
    throw new AppError('invalid_request', 'granularity needs a range: give from and to', {
      field: 'granularity',
    });
  }
  if (range) requireEarningsRange(range.from, range.to, granularity ?? 'month');
  const timezone = parseTimezone(query.timezone ?? undefined);
  return postActivity(
    deps.clickhouse,
    { postId, authorId },
    { ...(range ? { range } : {}), ...(granularity ? { granularity } : {}), timezone },
  );
}

/** A postEarnings row with the post as the read path shows it (null: its payment failed on chain). */
export interface PostEarningsWithPost extends PostEarningsRow {
  post: PostView | null;
}

/** The REST twin's page: postEarningsFor, then the page's posts in one statement. */
export async function postEarningsWithPosts(
  deps: Parameters<typeof postEarningsFor>[0] & { reads: { db: Db } },
  viewer: Viewer,
  query: Parameters<typeof postEarningsFor>[2],
): Promise<{ rows: PostEarningsWithPost[]; hasMore: boolean; nextCursor?: string }> {
  const page = await postEarningsFor(deps, viewer, query);
  const posts = new Map(
    (
      await hydratePosts(
        deps.reads,
        page.rows.map((row) => row.postId),
      )
    ).map((post) => [post.id, post]),
  );
  return { ...page, rows: page.rows.map((row) => ({ ...row, post: posts.get(row.postId) ?? null })) };
}
