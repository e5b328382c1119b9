import type { ReportSpec } from '../../../domain/reports/report-kinds.js';
import { REPORT_COLUMNS } from '../../../domain/reports/report-kinds.js';
import { historyTypeSql } from '../../../domain/reports/history-types.js';
import {
  csvRecord,
  currencySymbol,
  formatUnits,
  instantPrinter,
  ledgerCurrency,
  NATIVE_SYMBOL,
  parseClickHouseTime,
} from '../../../domain/reports/report-format.js';
import { STREAM_SETTINGS } from '../../../adapters/clickhouse/index.js';
import type { ReportWriterDeps, WrittenReport } from '../write-report.js';
import { reportAccountsTable, syncReportAccounts } from './report-accounts.js';
import { columnPicker, rowPrinter, type ReportSink } from './report-sink.js';
import {
  chTime,
  intervalParams,
  sqlDecimals,
  sqlSymbol,
  sqlCsvCell,
  sqlInstant,
  sqlUnits,
  writeParquet,
  parquetColumns,
} from './report-query.js';

interface LegRow {
  x_created_at: string;
  x_movement: string;
  x_kind: string;
  x_type: string;
  x_account: string;
  x_account_kind: string;
  x_currency: string;
  x_amount: string;
  x_swap_tx: string;
  x_status: string;
  x_slot: string;
  x_finalized_at: string;
  x_related_post: string;
  x_counterparty: string;
}

/**
 * A leg's history type: shipped since schema/clickhouse/0004, computed from the same definition for
 * legs shipped before (until `cli reindex` ships them again).
 */
export const LEG_TYPE_SQL = `if(history_type != '', toString(history_type), ${historyTypeSql('toString(movement_kind)', 'amount')})`;

/**
 * Every ledger leg with created_at in `[start, end)`, oldest first (created_at, then leg id), with
 * what ClickHouse knows of its chain transaction: `slot` from chain_transactions, `status` the
 * latest verdict's (failed when it failed on chain; else its commitment, confirmed or finalized;
 * confirmed for a landed transaction not judged yet, e.g. a deposit; pending otherwise; empty with
 * no swap_tx) and `finalized_at` when a check found it finalized. Both look-ups read only the
 * signatures of the interval's legs. The legs' leg ids (the sorting key) are looked up first, so
 * FINAL reads only the granules holding them, not the whole month's partition (the writer runs
 * this once per slice of the interval).
 */
function legsQuery(t: (name: string) => string): string {
  const inInterval = `created_at >= {start:DateTime64(3, 'UTC')} AND created_at < {end:DateTime64(3, 'UTC')}`;
  const signatures = `SELECT swap_tx FROM ${t('ledger_legs')} WHERE ${inInterval} AND swap_tx != ''`;
  return `SELECT l.created_at AS x_created_at, toString(l.movement_id) AS x_movement,
                 toString(l.movement_kind) AS x_kind, l.leg_type AS x_type,
                 if(l.account_kind = 'user', ua.handle, toString(l.account_kind)) AS x_account,
                 toString(l.account_kind) AS x_account_kind, toString(l.currency) AS x_currency,
                 toString(l.amount) AS x_amount, l.swap_tx AS x_swap_tx,
                 multiIf(l.swap_tx = '', '', v.v_status = 'failed_on_chain', 'failed',
                         v.v_commitment != '', toString(v.v_commitment), c.slot > 0, 'confirmed', 'pending') AS x_status,
                 if(c.slot > 0, toString(c.slot), '') AS x_slot,
                 if(v.v_finalized_n > 0, toString(v.v_finalized_at), '') AS x_finalized_at,
                 if(isNull(l.related_post_id), '', toString(l.related_post_id)) AS x_related_post,
                 if(isNull(l.counterparty_id), '', cp.handle) AS x_counterparty,
                 l.leg_id AS x_leg
            FROM (SELECT leg_id, movement_id, movement_kind, account_kind, account_id, currency, amount,
                         created_at, swap_tx, related_post_id, counterparty_id, ${LEG_TYPE_SQL} AS leg_type
                    FROM ${t('ledger_legs')} FINAL
                   WHERE leg_id IN (SELECT leg_id FROM ${t('ledger_legs')} WHERE ${inInterval})
                     AND ${inInterval}) AS l
            LEFT JOIN ${reportAccountsTable(t('report_accounts'))} AS ua ON ua.account_id = l.account_id
            LEFT JOIN ${reportAccountsTable(t('report_accounts'))} AS cp ON cp.account_id = l.counterparty_id
            LEFT JOIN (SELECT signature, max(slot) AS slot FROM ${t('chain_transactions')} FINAL
                        WHERE signature IN (${signatures}) GROUP BY signature) AS c ON c.signature = l.swap_tx
            LEFT JOIN (SELECT signature, argMax(status, checked_at) AS v_status,
                              argMax(commitment, checked_at) AS v_commitment,
                              countIf(commitment = 'finalized') AS v_finalized_n,
                              minIf(checked_at, commitment = 'finalized') AS v_finalized_at
                         FROM ${t('reconciliation')} FINAL
                        WHERE signature IN (${signatures}) GROUP BY signature) AS v ON v.signature = l.swap_tx
           ORDER BY x_created_at, x_leg`;
}

/**
 * ledger.itemized in Parquet reads its interval in slices of this length (CSV and JSON Lines: in
 * slices of at most LEDGER_SLICE_LEGS legs), one query each, oldest first: the
 * FINAL, the sort and the joins (restricted to the slice's signatures) then hold one slice's legs,
 * not the interval's (a month of 10M legs in one query grew the process by 7.7 GB on chdb).
 */
export const LEDGER_SLICE_MS = 6 * 3_600_000;

/** The interval's parameters for each slice of it, in order (`start`/`end` the slice's). */
export function sliceParams(
  params: Record<string, string>,
  startMs: number,
  endMs: number,
): Record<string, string>[] {
  const slices: Record<string, string>[] = [];
  for (let from = startMs; from < endMs; from += LEDGER_SLICE_MS) {
    slices.push({ ...params, start: chTime(from), end: chTime(Math.min(from + LEDGER_SLICE_MS, endMs)) });
  }
  return slices;
}

/** The granularity of leg-bounded slices: their bounds fall on these (UTC ms multiples). */
const LEG_BUCKET_MS = 15 * 60_000;
/**
 * The most legs a CSV/JSON Lines slice holds (unless one 15-minute bucket holds more): at 10M legs
 * a 6-hour slice held ~80k legs, and the run grew the process by +413 MB in 136 s; ~37k-leg slices
 * +352 MB in 233.5 s (each query has a fixed cost; beside another run), ~17k-leg ones no lower at
 * twice the queries (docs/benchmarks.md).
 */
export const LEDGER_SLICE_LEGS = 40_000;

/**
 * Slices of `[startMs, endMs)` holding at most `maxLegs` legs each (counted per 15-minute bucket,
 * without FINAL: a bound, not an exact count), oldest first; bounds on bucket starts.
 */
export function legSlices(
  params: Record<string, string>,
  startMs: number,
  endMs: number,
  buckets: readonly { b: string; n: string }[],
  maxLegs: number,
): Record<string, string>[] {
  const slices: Record<string, string>[] = [];
  let from = startMs;
  let held = 0;
  for (const bucket of buckets) {
    const at = Number(bucket.b) * LEG_BUCKET_MS;
    const n = Number(bucket.n);
    if (held > 0 && held + n > maxLegs && at > from && at < endMs) {
      slices.push({ ...params, start: chTime(from), end: chTime(at) });
      from = at;
      held = 0;
    }
    held += n;
  }
  if (from < endMs || slices.length === 0)
    slices.push({ ...params, start: chTime(from), end: chTime(endMs) });
  return slices;
}

function legBucketsQuery(t: (name: string) => string): string {
  return `SELECT intDiv(toUnixTimestamp64Milli(created_at), ${LEG_BUCKET_MS}) AS b, count() AS n
            FROM ${t('ledger_legs')}
           WHERE created_at >= {start:DateTime64(3, 'UTC')} AND created_at < {end:DateTime64(3, 'UTC')}
           GROUP BY b ORDER BY b ${STREAM_SETTINGS}`;
}

/** The interval's legs (what legsQuery yields rows for: its joins are many-to-one). */
function legsCountQuery(t: (name: string) => string): string {
  return `SELECT count() AS n FROM ${t('ledger_legs')} FINAL
           WHERE created_at >= {start:DateTime64(3, 'UTC')} AND created_at < {end:DateTime64(3, 'UTC')}
          ${STREAM_SETTINGS}`;
}

const orEmpty = (value: string): string | null => (value === '' ? null : value);

/** Bytes of `\n` in a chunk. */
function lineFeeds(chunk: Uint8Array): number {
  let n = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n += 1;
  return n;
}

/**
 * ledger.itemized in CSV, each record printed by the engine (the cells as the JSON Lines writer
 * prints them: the same times, amounts and quoting), so the bytes pass through JavaScript as they
 * are, never parsed into an object per row: at 10M legs the JSON rows' garbage alone grew the
 * process by ~150 MB between full collections (docs/benchmarks.md). One String column per row in
 * TabSeparatedRaw (no escaping) ending in `\r`, which the format's `\n` makes CRLF. Only handles
 * can come from a user, and a handle is `[a-z0-9_]` (profile-rules.ts): no cell holds a line feed,
 * so the records are the chunks' line feeds.
 */
async function writeCsv(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  baseQuery: string,
  slices: readonly Record<string, string>[],
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  const cells: Record<string, string> = {
    created_at: sqlInstant('x_created_at', spec.timezone),
    movement_id: 'x_movement',
    kind: 'x_kind',
    type: 'x_type',
    account: sqlCsvCell('x_account'),
    account_kind: 'x_account_kind',
    currency: sqlSymbol('x_currency', NATIVE_SYMBOL),
    amount: sqlUnits('toInt64(x_amount)', sqlDecimals('x_currency')),
    swap_tx: 'x_swap_tx',
    status: 'x_status',
    slot: 'x_slot',
    finalized_at: `if(x_finalized_at = '', '', ${sqlInstant("toDateTime64(x_finalized_at, 3, 'UTC')", spec.timezone)})`,
    related_post_id: 'x_related_post',
    counterparty: sqlCsvCell('x_counterparty'),
  };
  const record = parquetColumns(spec.columns, cells)
    .map((column) => column.sql)
    .join(", ',', ");
  const query = `SELECT concat(${record}, '\\r') FROM (${baseQuery})
                 ${STREAM_SETTINGS}, max_bytes_before_external_sort = 100000000`;
  await out.text(csvRecord(spec.columns));
  let rowCount = 0;
  for (const slice of slices) {
    const chunks = deps.clickhouse.streamBytes({
      query,
      query_params: slice,
      format: 'TabSeparatedRaw',
      ...(signal ? { abort_signal: signal } : {}),
    });
    for await (const chunk of chunks) {
      rowCount += lineFeeds(chunk);
      await out.bytes(chunk);
    }
  }
  await out.flush();
  return { rowCount, summary: null };
}

/** ledger.itemized in csv, jsonl or parquet. */
export async function writeLedgerItemized(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  const ch = deps.clickhouse;
  await syncReportAccounts(deps, signal);
  const params = intervalParams(spec);
  const slices = sliceParams(params, spec.intervalStart.getTime(), spec.intervalEnd.getTime());
  const base = {
    query: legsQuery((name) => ch.table(name)),
    params,
    slices,
    countQuery: legsCountQuery((name) => ch.table(name)),
  };
  if (spec.format === 'parquet') {
    const parquet: Record<string, string> = {
      created_at: 'toTimeZone(x_created_at, {tz:String})',
      movement_id: 'toUUID(x_movement)',
      kind: 'x_kind',
      type: 'x_type',
      account: 'x_account',
      account_kind: 'x_account_kind',
      currency: sqlSymbol('x_currency', NATIVE_SYMBOL),
      amount: sqlUnits('toInt64(x_amount)', sqlDecimals('x_currency')),
      swap_tx: "nullIf(x_swap_tx, '')",
      status: "nullIf(x_status, '')",
      slot: 'toUInt64OrNull(x_slot)',
      finalized_at:
        "if(x_finalized_at = '', NULL, toTimeZone(toDateTime64(x_finalized_at, 3, 'UTC'), {tz:String}))",
      related_post_id: 'toUUIDOrNull(x_related_post)',
      counterparty: "nullIf(x_counterparty, '')",
    };
    return {
      rowCount: await writeParquet(ch, out, base, parquetColumns(spec.columns, parquet), signal),
      summary: null,
    };
  }
  if (spec.format !== 'csv' && spec.format !== 'jsonl')
    throw new Error(`ledger.itemized has no ${spec.format} format`);
  // Text formats read slices bounded by leg count (the 6-hour slices' legs grow with the volume).
  const buckets: { b: string; n: string }[] = [];
  for await (const row of ch.streamRows<{ b: string; n: string }>({
    query: legBucketsQuery((name) => ch.table(name)),
    query_params: params,
    ...(signal ? { abort_signal: signal } : {}),
  }))
    buckets.push(row);
  const textSlices = legSlices(
    params,
    spec.intervalStart.getTime(),
    spec.intervalEnd.getTime(),
    buckets,
    LEDGER_SLICE_LEGS,
  );
  if (spec.format === 'csv') return writeCsv(deps, spec, out, base.query, textSlices, signal);
  const printer = rowPrinter(spec.format, spec.columns);
  const pick = columnPicker(REPORT_COLUMNS['ledger.itemized'], spec.columns);
  const printTime = instantPrinter(spec.timezone);
  await out.text(printer.header());
  let rowCount = 0;
  for (const slice of textSlices) {
    const rows = ch.streamRows<LegRow>({
      query: `${base.query} ${STREAM_SETTINGS}, max_bytes_before_external_sort = 100000000`,
      query_params: slice,
      ...(signal ? { abort_signal: signal } : {}),
    });
    for await (const row of rows) {
      const currency = ledgerCurrency(row.x_currency);
      await out.text(
        printer.row(
          pick([
            printTime(parseClickHouseTime(row.x_created_at)),
            row.x_movement,
            row.x_kind,
            row.x_type,
            row.x_account,
            row.x_account_kind,
            currencySymbol(currency),
            formatUnits(BigInt(row.x_amount), currency),
            orEmpty(row.x_swap_tx),
            orEmpty(row.x_status),
            orEmpty(row.x_slot),
            row.x_finalized_at === '' ? null : printTime(parseClickHouseTime(row.x_finalized_at)),
            orEmpty(row.x_related_post),
            orEmpty(row.x_counterparty),
          ]),
        ),
      );
      rowCount += 1;
    }
  }
  await out.flush();
  return { rowCount, summary: null };
}
