import {
  STREAM_SETTINGS,
  type ClickHouse,
  type RowsParquetQuery,
} from '../../../adapters/clickhouse/index.js';
import type { ReportSpec } from '../../../domain/reports/report-kinds.js';
import { utcDay, utcDaySpan } from '../../../domain/reports/report-format.js';
import type { ReportSink } from './report-sink.js';

/** ClickHouse's DateTime64(3) text of an instant, in UTC (query parameters). */
export function chTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

/** The interval's query parameters every writer uses (`{start:DateTime64(3, 'UTC')}`, ...). */
export function intervalParams(spec: ReportSpec): Record<string, string> {
  const start = spec.intervalStart.getTime();
  const end = spec.intervalEnd.getTime();
  const span = utcDaySpan(start, end);
  return {
    tz: spec.timezone,
    start: chTime(start),
    end: chTime(end),
    firstDay: span.firstDay,
    lastDay: span.lastDay,
    fullFromDay: utcDay(span.fullFromMs),
    fullToDay: utcDay(span.fullToMs),
    fullFrom: chTime(span.fullFromMs),
    fullTo: chTime(span.fullToMs),
  };
}

/** One column of a report file: how Parquet selects it from the type's base query (typed, exact). */
export interface ParquetColumn {
  name: string;
  /** A ClickHouse expression over the base query's columns. */
  sql: string;
}

/**
 * The asked `columns`, in order, as Parquet selects them from a type's SQL per column (`sqlOf`).
 * A column without SQL is a bug of the writer (the request parser checks names), as in columnPicker.
 */
export function parquetColumns(
  columns: readonly string[],
  sqlOf: Readonly<Record<string, string>>,
): ParquetColumn[] {
  return columns.map((name) => {
    const sql = sqlOf[name];
    if (sql === undefined) throw new Error(`no Parquet column "${name}"`);
    return { name, sql };
  });
}

/**
 * ClickHouse text of a base-unit amount `expr` (Int64) as a decimal string with `decimals` places
 * (the Parquet twin of formatUnits: strings, so no column ever holds a float).
 */
export function sqlUnits(expr: string, decimalsExpr: string): string {
  return `concat(if(${expr} < 0, '-', ''), toString(intDiv(abs(${expr}), toInt64(exp10(${decimalsExpr})))), '.',
                 leftPad(toString(abs(${expr}) % toInt64(exp10(${decimalsExpr}))), ${decimalsExpr}, '0'))`;
}

/**
 * ClickHouse text of a DateTime64(3) `expr` as instantPrinter(timezone) prints it: ISO 8601 with
 * milliseconds, `Z` in UTC, else the offset in force then (`+01:00`), the zone read from the
 * `{tz:String}` parameter. The offset comes from the engine's time zone data, as the Parquet
 * files' times do.
 */
export function sqlInstant(expr: string, timezone: string): string {
  const local = `formatDateTime(${expr}, '%Y-%m-%dT%H:%i:%S', {tz:String})`;
  const ms = `leftPad(toString(toUnixTimestamp64Milli(${expr}) % 1000), 3, '0')`;
  if (timezone === 'UTC' || timezone === 'Etc/UTC') return `concat(${local}, '.', ${ms}, 'Z')`;
  const offset = `timeZoneOffset(toTimeZone(${expr}, {tz:String}))`;
  return `concat(${local}, '.', ${ms}, if(${offset} < 0, '-', '+'),
                 leftPad(toString(intDiv(abs(${offset}), 3600)), 2, '0'), ':',
                 leftPad(toString(intDiv(abs(${offset}) % 3600, 60)), 2, '0'))`;
}

/** ClickHouse text of a String `expr` as one CSV cell (csvCell: quoted when it holds `",\r\n`). */
export const sqlCsvCell = (expr: string) =>
  `if(match(${expr}, '[",\\r\\n]'), concat('"', replaceAll(${expr}, '"', '""'), '"'), ${expr})`;

/** The decimal places of a ledger currency column (`usdc` 6, `native` 9). */
export const sqlDecimals = (currencyExpr: string) => `if(${currencyExpr} = 'native', 9, 6)`;
/** The printed currency of a ledger currency column (see currencySymbol). */
export const sqlSymbol = (currencyExpr: string, nativeSymbol: string) =>
  `if(${currencyExpr} = 'native', '${nativeSymbol}', 'USDC')`;

/**
 * Streams `SELECT <columns> FROM (<base>)` as Parquet into the sink, ClickHouse writing the file
 * (on chdb into a temporary file first, see chdbParquet), and counts the rows with the same base
 * query. Times are
 * DateTime64(3, timezone) (Parquet timestamps), amounts decimal strings.
 */
export async function writeParquet(
  clickhouse: ClickHouse,
  out: ReportSink,
  base: {
    query: string;
    params: Record<string, unknown>;
    /** The base query's parameters of each slice, in order: on chdb the file is written slice by slice. */
    slices?: readonly Record<string, unknown>[];
    /** Counts the base query's rows (one `n` column); default `SELECT count() FROM (<base>)`. */
    countQuery?: string;
    /** The base query's rows when the caller has counted them already: no count query then. */
    rowCount?: number;
  },
  columns: readonly ParquetColumn[],
  signal: AbortSignal | undefined,
): Promise<number> {
  const select = `SELECT ${parquetProjection(columns)} FROM (${base.query}) ${STREAM_SETTINGS}, output_format_parquet_string_as_string = 1`;
  const chunks = clickhouse.streamBytes({
    query: select,
    query_params: base.params,
    format: 'Parquet',
    ...(base.slices ? { parts: base.slices.map((params) => ({ query: select, query_params: params })) } : {}),
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const chunk of chunks) await out.bytes(chunk);
  await out.flush();
  if (base.rowCount !== undefined) return base.rowCount;
  const counted = clickhouse.streamRows<{ n: string }>({
    query: base.countQuery ?? `SELECT count() AS n FROM (${base.query})`,
    query_params: base.params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const row of counted) return Number(row.n);
  return 0;
}

/** The SELECT list of a Parquet file's columns. */
function parquetProjection(columns: readonly ParquetColumn[]): string {
  return columns.map((c) => `${c.sql} AS \`${c.name}\``).join(',\n       ');
}

/**
 * Streams a Parquet file of rows computed in JavaScript into the sink, with bounded memory:
 * `rows.write` writes them as JSON Lines, which ClickHouse turns into the file's `columns` (see
 * ClickHouse.streamParquetOfRows; on chdb through a temporary file). The caller counts the rows.
 */
export async function writeParquetOfRows(
  clickhouse: ClickHouse,
  out: ReportSink,
  rows: RowsParquetQuery['rows'],
  params: Record<string, unknown>,
  columns: readonly ParquetColumn[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const chunks = clickhouse.streamParquetOfRows({
    rows,
    projection: parquetProjection(columns),
    query_params: params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const chunk of chunks) await out.bytes(chunk);
  await out.flush();
}
