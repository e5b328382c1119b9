import { AppError } from '../errors.js';
import { parseTimezone, zonedWallTime } from './report-request.js';
import type { ReportType } from './report-kinds.js';

/*
 * Finance periods (issue 50 item 3): a month `YYYY-MM` or a day `YYYY-MM-DD` in a timezone (UTC by
 * default) that finance closes. Closing makes three runs and freezes them; see
 * src/app/reports/finance-periods.ts and docs/reports.md "Closing a period".
 */

export type FinancePeriodStatus = 'open' | 'closing' | 'closed';

/** The runs a close makes, in this order: CSV, default columns, the period's timezone and interval. */
export const PERIOD_REPORT_TYPES = [
  'balance.summary',
  'ledger.itemized',
  'reconciliation.itemized',
] as const satisfies readonly ReportType[];

/**
 * Verdicts that keep a period from closing (the latest verdict per movement in the period), and
 * `not_finalized`: a payment of the period whose outbox row is not `finalized` (or `failed`) yet.
 */
export const BLOCKING_VERDICTS = [
  'pending',
  'missing',
  'amount_mismatch',
  'wrong_party',
  'unexplained',
] as const;

export interface PeriodBlocker {
  status: string;
  count: number;
}

/** A period label resolved in a timezone: [start, end). */
export interface PeriodWindow {
  period: string;
  timezone: string;
  start: Date;
  end: Date;
}

const PERIOD = /^(\d{4})-(\d{2})(?:-(\d{2}))?$/;

/** Checks `period` (400 naming `period`) and `timezone` (400 naming `timezone`); UTC by default. */
export function parsePeriod(period: unknown, timezoneRaw: unknown): PeriodWindow {
  const refuse = () =>
    new AppError('invalid_request', 'period must be a month YYYY-MM or a day YYYY-MM-DD', {
      field: 'period',
    });
  if (typeof period !== 'string') throw refuse();
  const parts = PERIOD.exec(period);
  if (!parts) throw refuse();
  const year = Number(parts[1]);
  const month = Number(parts[2]);
  const day = parts[3] === undefined ? null : Number(parts[3]);
  if (year < 1970 || month < 1 || month > 12) throw refuse();
  if (day !== null) {
    const check = new Date(Date.UTC(year, month - 1, day));
    if (day < 1 || check.getUTCMonth() !== month - 1) throw refuse();
  }
  const timezone = parseTimezone(timezoneRaw);
  const startWall = Date.UTC(year, month - 1, day ?? 1);
  const endWall = day === null ? Date.UTC(year, month, 1) : Date.UTC(year, month - 1, day + 1);
  return {
    period,
    timezone,
    start: zonedWallTime(startWall, timezone),
    end: zonedWallTime(endWall, timezone),
  };
}

/** The body of a close: `{ "timezone"? }` (400 naming the field for anything else). */
export function parseCloseBody(body: unknown): { timezone: unknown } {
  if (body === undefined || body === null) return { timezone: undefined };
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('invalid_request', 'the body must be a JSON object', { field: 'body' });
  }
  for (const key of Object.keys(body)) {
    if (key !== 'timezone') {
      throw new AppError('invalid_request', `${key} is not a field of a close (timezone)`, { field: key });
    }
  }
  return { timezone: (body as { timezone?: unknown }).timezone };
}

/** A period as the services answer it. */
export interface FinancePeriod {
  period: string;
  timezone: string;
  periodStart: Date;
  periodEnd: Date;
  status: FinancePeriodStatus;
  closedAt: Date | null;
  reopenedAt: Date | null;
  reports: Array<{ type: ReportType; id: string; sha256: string | null; rowCount: number | null }>;
}
