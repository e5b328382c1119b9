import { historyRowsOfMovements } from '../../../adapters/postgres/transaction-history.repository.js';
import type { MovementKind } from '../../../domain/ledger/ledger.js';
import {
  toTransaction,
  transactionTypeOf,
  type Transaction,
} from '../../../domain/ledger/transaction-history.js';
import {
  COINTRACKER_HEADER,
  KOINLY_HEADER,
  REPORT_COLUMNS,
  type ReportSpec,
  type ReportSummaryLine,
} from '../../../domain/reports/report-kinds.js';
import {
  csvRecord,
  currencySymbol,
  formatUnits,
  instantPrinter,
  ledgerCurrency,
  parseClickHouseTime,
  type LedgerCurrency,
} from '../../../domain/reports/report-format.js';
import { cointrackerRows, koinlyRows, type StatementLine } from '../../../domain/reports/statement-rows.js';
import { STREAM_SETTINGS } from '../../../adapters/clickhouse/index.js';
import type { ReportWriterDeps, WrittenReport } from '../write-report.js';
import { columnPicker, ReportSink, rowPrinter } from './report-sink.js';
import { intervalParams, writeParquetOfRows } from './report-query.js';

/** Movements whose history rows are read from Postgres at once. */
const BATCH = 500;

interface MovementRow {
  x_movement: string;
  x_currency: string;
  x_created_at: string;
  x_kind: string;
  x_amount: string;
  x_swap_tx: string;
}

/** A statement line with what the history shows of its movement (null: not in the history). */
interface Entry {
  line: StatementLine;
  transaction: Transaction | null;
}

/**
 * account.statement: the account's legs in `[start, end)` summed per movement and currency (as the
 * history sums them), oldest first, from ClickHouse; `balance_after` runs per currency from the
 * opening balance (the account's legs before `start`). What the history says of each movement
 * (description, swap_tx, status, related post, counterparty) is read from Postgres in batches of
 * 500 movements through the history's own query and toTransaction, so a statement and
 * GET /me/transactions describe a movement in the same words; a movement the history does not list
 * (a native deposit: the history is in dollars) gets its type's words and the shipped swap_tx.
 * Formats csv, jsonl, koinly and cointracker; parquet through writeStatementParquet.
 */
export async function writeAccountStatement(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  const accountId = spec.accountId;
  if (!accountId) throw new Error('account.statement needs an account');
  if (spec.format === 'parquet') return writeStatementParquet(deps, spec, out, signal);
  const ch = deps.clickhouse;
  const legs = ch.table('ledger_legs');
  const params = { ...intervalParams(spec), account: accountId };
  const balances = new Map<LedgerCurrency, { opening: bigint; running: bigint }>();
  const opening = ch.streamRows<{ x_currency: string; x_amount: string }>({
    query: `SELECT toString(currency) AS x_currency, toString(sum(amount)) AS x_amount
              FROM ${legs} FINAL
             WHERE account_id = {account:UUID} AND created_at < {start:DateTime64(3, 'UTC')}
             GROUP BY currency`,
    query_params: params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const row of opening) {
    const amount = BigInt(row.x_amount);
    balances.set(ledgerCurrency(row.x_currency), { opening: amount, running: amount });
  }

  const printTime = instantPrinter(spec.timezone);
  const format = spec.format;
  const tool = format === 'koinly' || format === 'cointracker';
  const printer = format === 'csv' || format === 'jsonl' ? rowPrinter(format, spec.columns) : null;
  const pick = columnPicker(REPORT_COLUMNS['account.statement'], spec.columns);
  await out.text(
    spec.format === 'koinly'
      ? csvRecord(KOINLY_HEADER)
      : spec.format === 'cointracker'
        ? csvRecord(COINTRACKER_HEADER)
        : printer!.header(),
  );

  let rowCount = 0;
  let movementLines: Entry[] = [];
  /** Counts a line into its currency's running balance and answers that balance. */
  const count = (line: StatementLine): bigint => {
    const balance = balances.get(line.currency) ?? { opening: 0n, running: 0n };
    balance.running += line.amount;
    balances.set(line.currency, balance);
    return balance.running;
  };
  const writeMovement = async (entries: Entry[]) => {
    if (entries.length === 0) return;
    if (tool) {
      const lines = entries.map((entry) => entry.line);
      lines.forEach(count);
      const rows = spec.format === 'koinly' ? koinlyRows(lines) : cointrackerRows(lines);
      for (const row of rows) {
        await out.text(csvRecord(row));
        rowCount += 1;
      }
      return;
    }
    for (const { line, transaction } of entries) {
      const balanceAfter = count(line);
      await out.text(
        printer!.row(
          pick([
            printTime(line.createdAtMs),
            currencySymbol(line.currency),
            line.type,
            formatUnits(line.amount, line.currency),
            formatUnits(balanceAfter, line.currency),
            line.description,
            line.swapTx,
            transaction?.status ?? null,
            transaction?.relatedPostId ?? null,
            transaction?.counterparty ?? null,
          ]),
        ),
      );
      rowCount += 1;
    }
  };

  let batch: MovementRow[] = [];
  const flushBatch = async () => {
    const ids = [...new Set(batch.map((row) => row.x_movement))];
    const history = new Map(
      (await historyRowsOfMovements(deps.db, accountId, ids)).map((row) => [
        row.movementId,
        toTransaction(row),
      ]),
    );
    for (const row of batch) {
      const entry = toEntry(row, history.get(row.x_movement) ?? null);
      if (movementLines.length > 0 && movementLines[0]!.line.movementId !== entry.line.movementId) {
        await writeMovement(movementLines);
        movementLines = [];
      }
      movementLines.push(entry);
    }
    batch = [];
  };
  const rows = ch.streamRows<MovementRow>({
    query: `SELECT toString(movement_id) AS x_movement, toString(currency) AS x_currency,
                   min(created_at) AS x_created_at, toString(any(movement_kind)) AS x_kind,
                   toString(sum(amount)) AS x_amount, any(swap_tx) AS x_swap_tx
              FROM ${legs} FINAL
             WHERE account_id = {account:UUID}
               AND created_at >= {start:DateTime64(3, 'UTC')} AND created_at < {end:DateTime64(3, 'UTC')}
             GROUP BY movement_id, currency
             ORDER BY x_created_at, x_movement, x_currency
             ${STREAM_SETTINGS}`,
    query_params: params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  for await (const row of rows) {
    batch.push(row);
    // A movement's lines (one per currency) stay in one batch: cut only between movements.
    if (batch.length >= BATCH && batch.at(-1)!.x_movement !== batch.at(-2)?.x_movement) {
      const last = batch.pop()!;
      await flushBatch();
      batch.push(last);
    }
  }
  await flushBatch();
  await writeMovement(movementLines);
  await out.flush();

  const summary: ReportSummaryLine[] = [...balances]
    .sort(([a], [b]) => (a < b ? 1 : -1))
    .map(([currency, { opening: open, running }]) => ({
      currency: currencySymbol(currency),
      opening: formatUnits(open, currency),
      closing: formatUnits(running, currency),
    }));
  return { rowCount, summary };
}

const FALLBACK_DESCRIPTION: Record<string, string> = {
  deposit: 'Deposit',
  swap: 'Swap of native tokens to USDC',
  refund: 'Refund of a failed payment',
};

function toEntry(row: MovementRow, transaction: Transaction | null): Entry {
  const currency = ledgerCurrency(row.x_currency);
  const amount = BigInt(row.x_amount);
  const kind = row.x_kind as MovementKind;
  const type = transactionTypeOf(kind, amount < 0n);
  return {
    transaction,
    line: {
      createdAtMs: parseClickHouseTime(row.x_created_at),
      movementId: row.x_movement,
      kind,
      currency,
      type,
      amount,
      description: transaction?.description ?? FALLBACK_DESCRIPTION[type] ?? type,
      swapTx: transaction?.swapTx ?? (row.x_swap_tx === '' ? null : row.x_swap_tx),
    },
  };
}

/** ClickHouse types of the statement's columns in Parquet. */
const PARQUET_TYPES: Record<string, string> = {
  created_at: "DateTime64(3, 'UTC')",
  swap_tx: 'Nullable(String)',
  status: 'Nullable(String)',
  related_post_id: 'Nullable(UUID)',
  counterparty: 'Nullable(String)',
};

/**
 * A statement as Parquet: the balance runs in JavaScript, so the statement is written as JSON Lines
 * (times as UTC text) and ClickHouse turns those into the Parquet file (writeParquetOfRows: on chdb
 * through a temporary file, with backpressure, so nothing holds the statement whole). Times come
 * out as timestamps in the run's timezone; the other columns as PARQUET_TYPES says, else strings.
 */
async function writeStatementParquet(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  let written: WrittenReport | undefined;
  const structure = spec.columns.map((name) => `${name} ${PARQUET_TYPES[name] ?? 'String'}`).join(', ');
  const columns = spec.columns.map((name) => ({
    name,
    sql: name === 'created_at' ? 'toTimeZone(created_at, {tz:String})' : `\`${name}\``,
  }));
  await writeParquetOfRows(
    deps.clickhouse,
    out,
    {
      structure,
      write: async (input) => {
        written = await writeAccountStatement(
          deps,
          { ...spec, format: 'jsonl', timezone: 'UTC' },
          new ReportSink(input, signal),
          signal,
        );
      },
    },
    { tz: spec.timezone },
    columns,
    signal,
  );
  if (!written) throw new Error('the statement was not written');
  return written;
}
