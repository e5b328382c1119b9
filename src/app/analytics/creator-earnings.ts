import { localBucketStart } from './local-buckets.js';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import {
  EARNINGS_SOURCES,
  requireEarningsRange,
  type EarningsBucket,
  type EarningsGranularity,
  type EarningsGroupBy,
  type EarningsSource,
} from '../../domain/analytics/earnings-period.js';
import { requireOwnerOrFinance } from '../../domain/auth/access-rules.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { parseTimezone } from '../../domain/reports/report-request.js';

/*
 * A creator's USDC earnings over any period (GraphQL creatorEarnings, REST GET /me/earnings), read
 * from ClickHouse's creator_earnings: every earned USDC leg of the creator (their share of each paid
 * reply, quote and repost on their posts, and the negative leg of a reversal), with the source and
 * the post engaged with (schema/clickhouse/0005). Creator-fund payouts are native tokens and never
 * reach that table (0003); received sends do not count as earned.
 */

export interface CreatorEarningsQuery {
  /** Whose earnings; the viewer's own when absent (REST /me). */
  handle?: string;
  from: Date;
  to: Date;
  granularity: EarningsGranularity;
  /** An IANA name; UTC when absent. */
  timezone?: string | null;
  groupBy?: EarningsGroupBy;
}

/**
 * The creator's earnings in [from, to) per local hour, day, week (from Monday) or month, split by
 * source or by post when asked. Buckets without earnings are absent; a bucket whose engagement was
 * reversed within it sums to 0 and is kept. Own handle only; finance and admin read any; another
 * handle is forbidden. The range bound depends on the granularity (EARNINGS_RANGE_LIMITS).
 */
export async function creatorEarningsFor(
  deps: { accounts: Pick<AccountStore, 'byHandle'>; clickhouse: ClickHouse },
  viewer: Viewer,
  query: CreatorEarningsQuery,
): Promise<EarningsBucket[]> {
  const timezone = parseTimezone(query.timezone ?? undefined);
  requireEarningsRange(query.from, query.to, query.granularity);
  let creatorId = viewer.accountId;
  if (query.handle !== undefined && query.handle !== viewer.handle) {
    const creator = await deps.accounts.byHandle(query.handle);
    if (!creator) throw new AppError('not_found', `No user @${query.handle}`);
    requireOwnerOrFinance(viewer, creator.id, "Earnings are their creator's (or finance's) to read");
    creatorId = creator.id;
  }
  return readCreatorEarnings(deps.clickhouse, {
    creatorId,
    from: query.from,
    to: query.to,
    granularity: query.granularity,
    timezone,
    groupBy: query.groupBy ?? 'none',
  });
}

const GROUP_COLUMN: Record<EarningsGroupBy, string | null> = {
  none: null,
  source: 'source',
  post: 'post_id',
};

/** The read itself, without the access rule and range bound (creatorEarningsFor; the benchmark). */
export async function readCreatorEarnings(
  ch: ClickHouse,
  query: {
    creatorId: string;
    from: Date;
    to: Date;
    granularity: EarningsGranularity;
    timezone: string;
    groupBy: EarningsGroupBy;
  },
): Promise<EarningsBucket[]> {
  const group = GROUP_COLUMN[query.groupBy];
  const groupSelect = group ? `, toString(${group}) AS grp` : '';
  const groupBy = group ? `, ${group}` : '';
  const result = await ch.client.query({
    query: `SELECT toUnixTimestamp(${localBucketStart(query.granularity, 'created_at')}) AS start${groupSelect},
                   toString(sum(amount)) AS amount
              FROM ${ch.table('creator_earnings')} FINAL
             WHERE creator_id = {creator:UUID}
               AND created_at >= {from:DateTime64(3, 'UTC')} AND created_at < {to:DateTime64(3, 'UTC')}
             GROUP BY start${groupBy}
             ORDER BY start${groupBy}`,
    query_params: {
      creator: query.creatorId,
      from: query.from.getTime() / 1000,
      to: query.to.getTime() / 1000,
      tz: query.timezone,
    },
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ start: number; grp?: string | null; amount: string }>();
  return rows.map((row) => ({
    bucket: new Date(row.start * 1000).toISOString(),
    amountMicro: BigInt(row.amount),
    source: query.groupBy === 'source' ? sourceOf(row.grp) : null,
    postId: query.groupBy === 'post' ? (row.grp ?? null) : null,
  }));
}

/** '' (a leg shipped before 0005, until `cli reindex`) reads as no source. */
function sourceOf(raw: string | null | undefined): EarningsSource | null {
  return EARNINGS_SOURCES.find((source) => source === raw) ?? null;
}
