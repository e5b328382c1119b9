import type { ReportSpec } from '../../../domain/reports/report-kinds.js';
import { REPORT_COLUMNS } from '../../../domain/reports/report-kinds.js';
import {
  formatUnits,
  instantPrinter,
  parseClickHouseTime,
  USDC_SYMBOL,
} from '../../../domain/reports/report-format.js';
import { STREAM_SETTINGS } from '../../../adapters/clickhouse/index.js';
import type { ReportWriterDeps, WrittenReport } from '../write-report.js';
import { columnPicker, rowPrinter, type ReportSink } from './report-sink.js';
import { intervalParams, sqlUnits, writeParquet, parquetColumns } from './report-query.js';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

interface VerdictRow {
  r_day: string;
  r_movement: string;
  r_swap_tx: string;
  r_status: string;
  r_ledger_amount: string;
  r_chain_amount: string;
  r_commitment: string;
  r_detail: string;
  r_checked_at: string;
}

/**
 * The latest verdict per ledger movement whose ledger time is in `[start, end)`.
 *
 * `reconciliation` knows a movement's UTC day (`ledger_day`), not its instant. A verdict of a UTC
 * day wholly inside the interval is in it; on the (at most two) edge days the movement's exact
 * `created_at` decides, read from the shipped `ledger_legs` (so a movement whose legs are not
 * shipped yet is not listed on an edge day: runs follow the shipper). A verdict with no movement
 * (`unexplained`: USDC left a wallet with no ledger entry; nil movement id) has the block's UTC day,
 * and on an edge day its block time from `chain_transactions`. Several verdicts of one movement
 * (one per signature after a re-sign) collapse to the latest check (argMax on checked_at); rows are
 * in the table's order (ledger day, movement id), which ClickHouse reads without sorting.
 */
export function verdictsQuery(reconciliation: string, legs: string, chainTransactions: string): string {
  // Output names differ from the table's columns: an alias would shadow the column in WHERE.
  return `SELECT toString(ledger_day) AS r_day, toString(movement_id) AS r_movement,
                 argMax(signature, checked_at) AS r_swap_tx, argMax(status, checked_at) AS r_status,
                 toString(argMax(ledger_amount, checked_at)) AS r_ledger_amount,
                 toString(argMax(chain_amount, checked_at)) AS r_chain_amount,
                 argMax(commitment, checked_at) AS r_commitment, argMax(detail, checked_at) AS r_detail,
                 max(checked_at) AS r_checked_at,
                 if(movement_id = toUUID('${NIL_UUID}'), signature, '') AS r_unexplained
            FROM ${reconciliation} FINAL
           WHERE ledger_day BETWEEN {firstDay:Date} AND {lastDay:Date}
             AND ((ledger_day >= {fullFromDay:Date} AND ledger_day < {fullToDay:Date})
                  OR (movement_id != toUUID('${NIL_UUID}') AND movement_id IN (
                        SELECT movement_id FROM ${legs}
                         WHERE created_at >= {start:DateTime64(3, 'UTC')} AND created_at < {end:DateTime64(3, 'UTC')}
                           AND NOT (created_at >= {fullFrom:DateTime64(3, 'UTC')} AND created_at < {fullTo:DateTime64(3, 'UTC')})))
                  OR (movement_id = toUUID('${NIL_UUID}') AND signature IN (
                        SELECT signature FROM ${chainTransactions}
                         WHERE block_time >= {start:DateTime64(3, 'UTC')} AND block_time < {end:DateTime64(3, 'UTC')})))
           GROUP BY ledger_day, movement_id, r_unexplained
           ORDER BY ledger_day, movement_id, r_unexplained`;
}

/** reconciliation.itemized in csv, jsonl or parquet. */
export async function writeReconciliationItemized(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  const ch = deps.clickhouse;
  const base = {
    query: verdictsQuery(ch.table('reconciliation'), ch.table('ledger_legs'), ch.table('chain_transactions')),
    params: intervalParams(spec),
  };
  if (spec.format === 'parquet') {
    const parquet: Record<string, string> = {
      ledger_day: 'toDate(r_day)',
      movement_id: 'toUUID(r_movement)',
      swap_tx: 'r_swap_tx',
      status: 'toString(r_status)',
      currency: `'${USDC_SYMBOL}'`,
      ledger_amount: sqlUnits('toInt64(r_ledger_amount)', '6'),
      chain_amount: sqlUnits('toInt64(r_chain_amount)', '6'),
      commitment: 'toString(r_commitment)',
      detail: 'r_detail',
      checked_at: 'toTimeZone(r_checked_at, {tz:String})',
    };
    return {
      rowCount: await writeParquet(ch, out, base, parquetColumns(spec.columns, parquet), signal),
      summary: null,
    };
  }
  if (spec.format !== 'csv' && spec.format !== 'jsonl') {
    throw new Error(`reconciliation.itemized has no ${spec.format} format`);
  }
  const printer = rowPrinter(spec.format, spec.columns);
  const pick = columnPicker(REPORT_COLUMNS['reconciliation.itemized'], spec.columns);
  const printTime = instantPrinter(spec.timezone);
  await out.text(printer.header());
  let rowCount = 0;
  const rows = ch.streamRows<VerdictRow>({
    query: `${base.query} ${STREAM_SETTINGS}, optimize_aggregation_in_order = 1`,
    query_params: base.params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const row of rows) {
    await out.text(
      printer.row(
        pick([
          row.r_day,
          row.r_movement,
          row.r_swap_tx,
          row.r_status,
          USDC_SYMBOL,
          formatUnits(BigInt(row.r_ledger_amount), 'usdc'),
          formatUnits(BigInt(row.r_chain_amount), 'usdc'),
          row.r_commitment,
          row.r_detail,
          printTime(parseClickHouseTime(row.r_checked_at)),
        ]),
      ),
    );
    rowCount += 1;
  }
  await out.flush();
  return { rowCount, summary: null };
}
