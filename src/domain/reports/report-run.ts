import type { ReportFormat, ReportStatus, ReportSummaryLine, ReportType } from './report-kinds.js';

/** A report run as the services answer it (REST and GraphQL shape it; times are Dates). */
export interface ReportRun {
  /** UUID. */
  id: string;
  /** Who asked (only they see it). */
  accountId: string;
  type: ReportType;
  intervalStart: Date;
  intervalEnd: Date;
  timezone: string;
  columns: readonly string[];
  format: ReportFormat;
  /** The handle an account.statement is about; null for the whole ledger. */
  subjectHandle: string | null;
  status: ReportStatus;
  /** Set once succeeded: data rows (the header not counted), file bytes, sha256 (hex) of the file. */
  rowCount: number | null;
  bytes: number | null;
  sha256: string | null;
  /** Where the file is in the report store; null until succeeded. */
  fileKey: string | null;
  summary: ReportSummaryLine[] | null;
  /** Why it failed (a phrase for people); null unless failed. */
  error: string | null;
  /** Times the worker started it (more than 1 after a retry or a crash). */
  attempts: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** `/api/v1/reports/{id}/file`: where a succeeded run's file is downloaded. */
export function reportFileUrl(id: string): string {
  return `/api/v1/reports/${id}/file`;
}
