import type { TransactionType } from '../ledger/transaction-history.js';

/*
 * Report runs (finance's month close, an account's statement): what can be asked for. A run is a
 * file made once from ClickHouse over `[interval_start, interval_end)` and kept; the same
 * parameters from the same account while a run is pending or running answer that run.
 */

export const REPORT_TYPES = [
  'ledger.itemized',
  'reconciliation.itemized',
  'balance.summary',
  'account.statement',
] as const;
export type ReportType = (typeof REPORT_TYPES)[number];

/** `koinly` and `cointracker` are the accounting tools' own CSVs: `account.statement` only. */
export const REPORT_FORMATS = ['csv', 'jsonl', 'parquet', 'koinly', 'cointracker'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export const REPORT_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** Every history type, in the order balance.summary prints one column each. */
export const HISTORY_TYPES = [
  'post',
  'repost',
  'earn',
  'send',
  'receive',
  'deposit',
  'refund',
  'swap',
] as const satisfies readonly TransactionType[];

/** Each type's columns, in their default order; `columns` picks a subset in the order given. */
export const REPORT_COLUMNS: Readonly<Record<ReportType, readonly string[]>> = {
  'ledger.itemized': [
    'created_at',
    'movement_id',
    'kind',
    'type',
    'account',
    'account_kind',
    'currency',
    'amount',
    'swap_tx',
    'status',
    'slot',
    'finalized_at',
    'related_post_id',
    'counterparty',
  ],
  'reconciliation.itemized': [
    'ledger_day',
    'movement_id',
    'swap_tx',
    'status',
    'currency',
    'ledger_amount',
    'chain_amount',
    'commitment',
    'detail',
    'checked_at',
  ],
  'balance.summary': [
    'account',
    'account_kind',
    'currency',
    'opening',
    ...HISTORY_TYPES,
    'closing',
    'chain_closing',
    'difference',
  ],
  'account.statement': [
    'created_at',
    'currency',
    'type',
    'amount',
    'balance_after',
    'description',
    'swap_tx',
    'status',
    'related_post_id',
    'counterparty',
  ],
};

/** The exact header rows the accounting tools import (their own column sets, not `columns`). */
export const KOINLY_HEADER = [
  'Date',
  'Sent Amount',
  'Sent Currency',
  'Received Amount',
  'Received Currency',
  'Fee Amount',
  'Fee Currency',
  'Net Worth Amount',
  'Net Worth Currency',
  'Label',
  'Description',
  'TxHash',
] as const;
export const COINTRACKER_HEADER = [
  'Date',
  'Received Quantity',
  'Received Currency',
  'Sent Quantity',
  'Sent Currency',
  'Fee Amount',
  'Fee Currency',
  'Tag',
] as const;

/** The longest interval one run covers. */
export const REPORT_MAX_INTERVAL_DAYS = 366;

/** What a run was asked for, checked (see parseReportRequest). */
export interface ReportSpec {
  type: ReportType;
  /** Inclusive. */
  intervalStart: Date;
  /** Exclusive; never later than when the run was requested. */
  intervalEnd: Date;
  /** IANA name: how the file prints times (and reads a local `interval_*` without an offset). */
  timezone: string;
  /** The columns the file carries, in order (the type's default when none were asked for). */
  columns: readonly string[];
  format: ReportFormat;
  /**
   * The account the report is about: `account.statement`'s account (the caller's own when none was
   * named), or null for the whole ledger.
   */
  accountId: string | null;
}

/** One currency's bank-statement line of a run: what it opened and closed with (decimal strings). */
export interface ReportSummaryLine {
  currency: string;
  opening: string;
  closing: string;
}
