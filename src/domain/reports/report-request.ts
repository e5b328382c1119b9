import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import { zoneOffsetMs } from './zone-offset.js';
import {
  REPORT_COLUMNS,
  REPORT_FORMATS,
  REPORT_MAX_INTERVAL_DAYS,
  REPORT_TYPES,
  type ReportFormat,
  type ReportSpec,
  type ReportType,
} from './report-kinds.js';

/*
 * A report run's request, checked: what `POST /reports` and `requestReport` accept. Every refusal
 * is `invalid_request` naming the field (`details.field`); access is checked after input (400
 * before 403, see checkReportAccess), and the canonical form of the checked parameters is what
 * dedupes runs (reportParamsHash).
 */

/**
 * A request as checked, before the named account (a handle) is resolved to an id: the spec's
 * fields (the timezone canonical as Intl resolves it, `UTC` by default) and the handle `account`
 * named (account.statement only; null when none was given).
 */
export type ReportRequest = Omit<ReportSpec, 'accountId'> & { account: string | null };

const FIELDS = new Set([
  'type',
  'interval_start',
  'interval_end',
  'timezone',
  'columns',
  'format',
  'account',
]);

const DAY_MS = 86_400_000;

/** Formats with their own fixed header (the accounting tools' CSVs): `columns` does not apply. */
const TOOL_FORMATS: ReadonlySet<ReportFormat> = new Set(['koinly', 'cointracker']);

function invalid(field: string, message: string): AppError {
  return new AppError('invalid_request', `${field} ${message}`, { field });
}

/** Checks a request body as the transports received it; `now` is the request's time. */
export function parseReportRequest(body: unknown, now: Date): ReportRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_request', 'the body must be a JSON object', { field: 'body' });
  }
  const input = body as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!FIELDS.has(key))
      throw invalid(key, `is not a field of a report request (${[...FIELDS].join(', ')})`);
  }
  const type = input.type;
  if (typeof type !== 'string' || !(REPORT_TYPES as readonly string[]).includes(type)) {
    throw invalid('type', `must be one of ${REPORT_TYPES.join(', ')}`);
  }
  const reportType = type as ReportType;

  const timezone = parseTimezone(input.timezone);
  const intervalStart = parseInstant('interval_start', input.interval_start, timezone);
  const intervalEnd = parseInstant('interval_end', input.interval_end, timezone);
  if (intervalEnd.getTime() <= intervalStart.getTime()) {
    throw invalid('interval_end', 'must be after interval_start (the interval is [start, end))');
  }
  if (intervalEnd.getTime() > now.getTime()) {
    throw invalid('interval_end', `must not be later than the request's time (${now.toISOString()})`);
  }
  if (intervalEnd.getTime() - intervalStart.getTime() > REPORT_MAX_INTERVAL_DAYS * DAY_MS) {
    throw invalid('interval_end', `must be at most ${REPORT_MAX_INTERVAL_DAYS} days after interval_start`);
  }

  let format: ReportFormat = 'csv';
  if (input.format !== undefined && input.format !== null) {
    if (typeof input.format !== 'string' || !(REPORT_FORMATS as readonly string[]).includes(input.format)) {
      throw invalid('format', `must be one of ${REPORT_FORMATS.join(', ')}`);
    }
    format = input.format as ReportFormat;
  }
  if (TOOL_FORMATS.has(format) && reportType !== 'account.statement') {
    throw invalid('format', `${format} is a format of account.statement only`);
  }

  const columns = parseColumns(reportType, format, input.columns);

  let account: string | null = null;
  if (input.account !== undefined && input.account !== null) {
    if (reportType !== 'account.statement') throw invalid('account', 'applies to account.statement only');
    if (typeof input.account !== 'string' || !/^[a-z0-9_]{3,20}$/.test(input.account)) {
      throw invalid('account', 'must be an account handle (3-20 of a-z, 0-9, _)');
    }
    account = input.account;
  }
  return { type: reportType, intervalStart, intervalEnd, timezone, columns, format, account };
}

function parseColumns(type: ReportType, format: ReportFormat, raw: unknown): readonly string[] {
  const known = REPORT_COLUMNS[type];
  if (raw === undefined || raw === null) return known;
  if (TOOL_FORMATS.has(format)) {
    throw invalid('columns', `does not apply to format ${format} (its header is fixed)`);
  }
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalid('columns', `must be a non-empty list of ${type}'s columns: ${known.join(', ')}`);
  }
  const seen = new Set<string>();
  for (const column of raw) {
    if (typeof column !== 'string' || !known.includes(column)) {
      throw invalid('columns', `${JSON.stringify(column)} is not a column of ${type} (${known.join(', ')})`);
    }
    if (seen.has(column)) throw invalid('columns', `names ${column} twice`);
    seen.add(column);
  }
  return raw as string[];
}

/** An IANA name Intl knows, in its canonical spelling; `UTC` when none was given. */
export function parseTimezone(raw: unknown): string {
  if (raw === undefined || raw === null) return 'UTC';
  // Names only: Intl also takes offsets ("+01:00"), which are not IANA names.
  if (typeof raw !== 'string' || !/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(raw)) {
    throw invalid('timezone', 'must be an IANA time zone name such as UTC or Europe/Paris');
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    throw invalid('timezone', `${JSON.stringify(raw)} is not an IANA time zone name Intl knows`);
  }
}

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})$/;
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/**
 * An ISO 8601 instant (with `Z` or an offset), or a local `YYYY-MM-DD[THH:mm[:ss]]` read as the
 * wall-clock time in `timezone` (in a daylight-saving gap, the instant the clock jumps to).
 */
export function parseInstant(field: string, raw: unknown, timezone: string): Date {
  const refuse = () =>
    invalid(
      field,
      'must be an ISO 8601 instant (2026-11-01T00:00:00Z, or with an offset) or a local date and time YYYY-MM-DD[THH:mm[:ss]] read in timezone',
    );
  if (typeof raw !== 'string') throw refuse();
  const instant = INSTANT.exec(raw);
  const local = instant ? null : LOCAL.exec(raw);
  const parts = instant ?? local;
  if (!parts) throw refuse();
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((n) => Number(parts[n] ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(wall);
  if (
    year < 1970 ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    throw refuse();
  }
  if (instant) {
    const fraction = instant[7] ? Number(`0.${instant[7]}`) * 1000 : 0;
    const zone = instant[8]!;
    let offsetMinutes = 0;
    if (zone !== 'Z') {
      const sign = zone.startsWith('-') ? -1 : 1;
      const [h, m] = zone.slice(1).split(':').map(Number) as [number, number];
      if (h > 23 || m > 59) throw refuse();
      offsetMinutes = sign * (h * 60 + m);
    }
    return new Date(wall + Math.floor(fraction) - offsetMinutes * 60_000);
  }
  return zonedWallTime(wall, timezone);
}

/** The instant whose wall-clock time in `timezone` is `wall` (the fields of a Date.UTC value). */
export function zonedWallTime(wall: number, timezone: string): Date {
  // Two rounds: the offset at the guess, then at the corrected instant (DST edges).
  let guess = wall - zoneOffsetMs(wall, timezone);
  guess = wall - zoneOffsetMs(guess, timezone);
  return new Date(guess);
}

/** Who asks for a report, as access sees them. */
export interface ReportCaller {
  handle: string;
  role: string;
  scopes: ReadonlySet<string>;
}

/**
 * 403 unless the caller may have this report: an `account.statement` of their own account (no
 * `account`, or their own handle) with a key holding `read`; anything else (another type, or
 * another account's statement) with the finance role too.
 */
export function checkReportAccess(caller: ReportCaller, request: ReportRequest): void {
  if (!caller.scopes.has('read')) {
    throw new AppError('forbidden', 'Reports need an API key with the read scope');
  }
  const own =
    request.type === 'account.statement' && (request.account === null || request.account === caller.handle);
  if (own) return;
  if (caller.role !== 'finance' && caller.role !== 'admin') {
    const what =
      request.type === 'account.statement' ? "Another account's statement" : `A ${request.type} report`;
    throw new AppError('forbidden', `${what} needs the finance or admin role`);
  }
}

/**
 * The canonical JSON of a run's parameters (fixed key order, instants in UTC with milliseconds)
 * and its sha256 (hex): two requests with the same hash ask for the same file.
 */
export function reportParamsHash(spec: ReportSpec): string {
  return createHash('sha256').update(canonicalReportParams(spec)).digest('hex');
}

export function canonicalReportParams(spec: ReportSpec): string {
  return JSON.stringify([
    spec.type,
    spec.intervalStart.toISOString(),
    spec.intervalEnd.toISOString(),
    spec.timezone,
    [...spec.columns],
    spec.format,
    spec.accountId,
  ]);
}

/** A report id as clients hold it: a UUID (anything else is a 404, as another account's run is). */
export function isReportId(id: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
}

/** The file's content type per format. */
export function reportContentType(format: ReportFormat): string {
  switch (format) {
    case 'csv':
    case 'koinly':
    case 'cointracker':
      return 'text/csv; charset=utf-8';
    case 'jsonl':
      return 'application/x-ndjson';
    case 'parquet':
      return 'application/vnd.apache.parquet';
  }
}

/** The file's extension per format (koinly and cointracker are CSV files). */
export function reportFileExtension(format: ReportFormat): 'csv' | 'jsonl' | 'parquet' {
  return format === 'jsonl' || format === 'parquet' ? format : 'csv';
}

/** The file's name for Content-Disposition: type, interval (UTC dates) and extension. */
export function reportFileName(run: {
  id: string;
  type: ReportType;
  format: ReportFormat;
  intervalStart: Date;
  intervalEnd: Date;
}): string {
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const suffix = run.format === 'koinly' || run.format === 'cointracker' ? `-${run.format}` : '';
  return `${run.type.replace('.', '-')}-${day(run.intervalStart)}-${day(run.intervalEnd)}${suffix}-${run.id.slice(0, 8)}.${reportFileExtension(run.format)}`;
}
