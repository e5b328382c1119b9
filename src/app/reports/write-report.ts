import type { Writable } from 'node:stream';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import type { ReportSpec, ReportSummaryLine } from '../../domain/reports/report-kinds.js';
import { writeReconciliationItemized } from './report-writers/reconciliation-itemized.js';
import { ReportSink } from './report-writers/report-sink.js';

export interface ReportWriterDeps {
  clickhouse: ClickHouse;
  db: Db;
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
    case 'balance.summary':
    case 'account.statement':
      throw new Error(`report type ${spec.type} not written yet`);
  }
}
