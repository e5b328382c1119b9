import type { EarningsGranularity } from '../../domain/analytics/earnings-period.js';

/**
 * ClickHouse: the start of `column`'s hour, day, week (Monday) or month in the zone `{tz:String}`,
 * as a DateTime whose instant is that local start (toUnixTimestamp of it is the UTC instant).
 * toTimeZone only relabels the instant, so the day, Monday and 1st are the zone's; toDateTime(date,
 * zone) is that date's local midnight (a 23- or 25-hour day around a DST change is one bucket;
 * where midnight itself is skipped, the instant the clock jumps to). toStartOfHour keeps the zone
 * too (zones with :30 offsets start hours at :30 UTC). Earnings and post series share it, so their
 * buckets line up.
 */
export function localBucketStart(granularity: EarningsGranularity, column: string): string {
  const local = `toTimeZone(${column}, {tz:String})`;
  switch (granularity) {
    case 'hour':
      return `toStartOfHour(${local})`;
    case 'day':
      return `toDateTime(toDate(${local}), {tz:String})`;
    case 'week':
      return `toDateTime(toMonday(${local}), {tz:String})`;
    case 'month':
      return `toDateTime(toStartOfMonth(${local}), {tz:String})`;
  }
}
