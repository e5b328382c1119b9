import { reportAccountsPage } from '../../../adapters/postgres/report-facts.repository.js';
import type { ReportWriterDeps } from '../write-report.js';

const PAGE = 50_000;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * Copies every account's handle and wallet into ClickHouse `report_accounts` before a run that
 * prints accounts, so ClickHouse joins them itself (every format, Parquet included, and no look-up
 * per row). Handles can change: a run prints the handle as of its start. Costs one pass over the
 * accounts per run (pages of 50,000, TabSeparated written by Postgres); shipping accounts through
 * the event shipper as a third stream is the fix when that grows.
 */
export async function syncReportAccounts(
  deps: ReportWriterDeps,
  signal: AbortSignal | undefined,
): Promise<void> {
  let after = NIL_UUID;
  for (;;) {
    signal?.throwIfAborted();
    const page = await reportAccountsPage(deps.db, after, PAGE);
    if (page.count === 0 || !page.lastId) return;
    await deps.clickhouse.insertTabSeparated(
      'report_accounts',
      ['account_id', 'handle', 'wallet_address'],
      page.body,
    );
    if (page.count < PAGE) return;
    after = page.lastId;
  }
}

/** The latest copy of each account (a subquery to join on `account_id`). */
export function reportAccountsTable(table: string): string {
  return `(SELECT account_id, argMax(handle, synced_at) AS handle, argMax(wallet_address, synced_at) AS wallet_address
             FROM ${table} GROUP BY account_id)`;
}
