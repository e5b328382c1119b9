import { AppError } from '../errors.js';

/** The length of one earnings bucket: each starts at a local hour, midnight, Monday or 1st. */
export type EarningsGranularity = 'hour' | 'day' | 'week' | 'month';
export const EARNINGS_GRANULARITIES: readonly EarningsGranularity[] = ['hour', 'day', 'week', 'month'];

/** How one bucket's earnings are split: not at all, by the paid engagement, or by the creator's post. */
export type EarningsGroupBy = 'none' | 'source' | 'post';
export const EARNINGS_GROUP_BYS: readonly EarningsGroupBy[] = ['none', 'source', 'post'];

/** The paid engagement a USDC share came from (schema/clickhouse/0005: creator_earnings.source). */
export type EarningsSource = 'reply' | 'quote' | 'repost';
export const EARNINGS_SOURCES: readonly EarningsSource[] = ['reply', 'quote', 'repost'];

/**
 * The widest [from, to) one read may ask for, per granularity: a bound on what one read scans and
 * returns (31 days of hours = 744 buckets; 400 days; 5 years of weeks = 261 buckets, of months 60).
 * Weeks take the months' bound: a week bucket costs what a month bucket does, and 5 years of weeks
 * is the longest series a chart still draws.
 */
export const EARNINGS_RANGE_LIMITS: Readonly<
  Record<EarningsGranularity, { amount: number; unit: 'days' | 'years'; label: string }>
> = {
  hour: { amount: 31, unit: 'days', label: '31 days' },
  day: { amount: 400, unit: 'days', label: '400 days' },
  week: { amount: 5, unit: 'years', label: '5 years' },
  month: { amount: 5, unit: 'years', label: '5 years' },
};

/** One bucket of a creator's USDC earnings. */
export interface EarningsBucket {
  /** The local start of the bucket (hour, midnight, Monday, 1st) as an ISO 8601 UTC instant. */
  bucket: string;
  amountMicro: bigint;
  /** Set when grouped by source; null for a leg shipped before its source was (until `cli reindex`). */
  source: EarningsSource | null;
  /** The creator's post engaged with; set when grouped by post. */
  postId: string | null;
}

/**
 * [from, to): `to` after `from`, at most the granularity's limit later (years are calendar years in
 * UTC: from 2024-02-29 + 5 years = 2029-03-01). A larger range is refused, naming the limit.
 */
export function requireEarningsRange(from: Date, to: Date, granularity: EarningsGranularity): void {
  const limit = EARNINGS_RANGE_LIMITS[granularity];
  const latest = new Date(from.getTime());
  if (limit.unit === 'days') latest.setUTCDate(latest.getUTCDate() + limit.amount);
  else latest.setUTCFullYear(latest.getUTCFullYear() + limit.amount);
  if (!(to > from)) throw new AppError('invalid_request', 'to must be after from', { field: 'to' });
  if (to > latest) {
    throw new AppError(
      'invalid_request',
      `to must be at most ${limit.label} after from at ${granularity} granularity`,
      { field: 'to' },
    );
  }
}
