import type { Writable } from 'node:stream';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import type { ReportSpec, ReportSummaryLine } from '../../domain/reports/report-kinds.js';
import { writeAccountStatement } from './report-writers/account-statement.js';
import { writeBalanceSummary } from './report-writers/balance-summary.js';
import { writeLedgerItemized } from './report-writers/ledger-itemized.js';
import { writeReconciliationItemized } from './report-writers/reconciliation-itemized.js';
import { ReportSink } from './report-writers/report-sink.js';

export interface ReportWriterDeps {
  clickhouse: ClickHouse;
  db: Db;
  /**
   * The USDC and native mints (base58), for balance.summary's `chain_closing`. Optional: without
   * them the mints recorded in `platform_wallets` are used (the bootstrap records the mints it
   * creates; a configured mint such as mainnet USDC is not recorded, so pass `platform.usdcMint`).
   */
  mints?: { usdc: string; native: string };
}

export interface WrittenReport {
  /** Data rows written (the header row not counted). */
  rowCount: number;
  /** account.statement and balance.summary: opening and closing per currency; null otherwise. */
  summary: ReportSummaryLine[] | null;
}

/**
 * Writes the report `spec` asks for to `sink`, streaming from ClickHouse with backpressure (never
 * the whole file in memory), and resolves once the last byte is handed to `sink` (the caller ends
 * and closes it). Rejects on any failure; `signal` aborts it.
 */
export async function writeReport(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  sink: Writable,
  signal?: AbortSignal,
): Promise<WrittenReport> {
  signal?.throwIfAborted();
  const out = new ReportSink(sink, signal);
  switch (spec.type) {
    case 'reconciliation.itemized':
      return writeReconciliationItemized(deps, spec, out, signal);
    case 'ledger.itemized':
      return writeLedgerItemized(deps, spec, out, signal);
    case 'balance.summary':
      return writeBalanceSummary(deps, spec, out, signal);
    case 'account.statement':
      return writeAccountStatement(deps, spec, out, signal);
  }
}
