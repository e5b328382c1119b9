import { issueFileLink, type FileLink } from '../../../app/reports/report-file-links.js';
import {
  getRun,
  listRuns,
  REPORT_PAGE_MAX,
  requestRun,
  type ReportRunPage,
} from '../../../app/reports/report-runs.js';
import { AppError } from '../../../domain/errors.js';
import { REPORT_FILE_LINK_SECONDS } from '../../../domain/reports/report-file-link.js';
import { REPORT_MAX_INTERVAL_DAYS, type ReportSummaryLine } from '../../../domain/reports/report-kinds.js';
import { reportFileUrl, type ReportRun } from '../../../domain/reports/report-run.js';
import { builder } from '../builder.js';

/*
 * Report runs (REST /reports): the same service functions. Asking spends the `reports` bucket as
 * POST /reports does; the input's fields are REST's in camelCase, and a refusal names the GraphQL
 * argument (`input.intervalEnd`).
 */

const ReportStatusEnum = builder.enumType('ReportStatus', {
  values: {
    PENDING: { value: 'pending', description: 'Queued for the worker role.' },
    RUNNING: { value: 'running', description: 'Its file is being written.' },
    SUCCEEDED: { value: 'succeeded', description: 'Its file is ready: fileUrl, sha256, bytes, rowCount.' },
    FAILED: { value: 'failed', description: 'It ended without a file: see error.' },
  } as const,
});

const ReportSummaryLineRef = builder.objectRef<ReportSummaryLine>('ReportSummaryLine').implement({
  description: 'One currency’s opening and closing balance over the interval, as decimal strings.',
  fields: (t) => ({
    currency: t.exposeString('currency', { description: 'USDC or the native token’s symbol.' }),
    opening: t.exposeString('opening'),
    closing: t.exposeString('closing'),
  }),
});

const ReportRunRef = builder.objectRef<ReportRun>('ReportRun').implement({
  description: 'A report run: a file made once by the worker role over [intervalStart, intervalEnd).',
  fields: (t) => {
    const once =
      <T>(pick: (run: ReportRun) => T | null) =>
      (run: ReportRun) =>
        run.status === 'succeeded' ? pick(run) : null;
    return {
      id: t.exposeID('id'),
      type: t.exposeString('type', {
        description: 'ledger.itemized, reconciliation.itemized, balance.summary or account.statement.',
      }),
      status: t.expose('status', { type: ReportStatusEnum }),
      intervalStart: t.expose('intervalStart', { type: 'DateTime' }),
      intervalEnd: t.expose('intervalEnd', { type: 'DateTime' }),
      timezone: t.exposeString('timezone'),
      columns: t.exposeStringList('columns'),
      format: t.exposeString('format', { description: 'csv, jsonl, parquet, koinly or cointracker.' }),
      account: t.string({
        nullable: true,
        description: 'The handle an account.statement is about; null for the whole ledger.',
        resolve: (run) => run.subjectHandle,
      }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      startedAt: t.expose('startedAt', { type: 'DateTime', nullable: true }),
      finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
      rowCount: t.string({
        nullable: true,
        description: 'Data rows (the header not counted), as digits; once succeeded.',
        resolve: once((run) => (run.rowCount === null ? null : String(run.rowCount))),
      }),
      bytes: t.string({
        nullable: true,
        description: 'The file’s size in bytes, as digits; once succeeded.',
        resolve: once((run) => (run.bytes === null ? null : String(run.bytes))),
      }),
      sha256: t.string({
        nullable: true,
        description: 'Hex sha256 of the file; once succeeded.',
        resolve: once((run) => run.sha256),
      }),
      fileUrl: t.string({
        nullable: true,
        description:
          'Where the file is downloaded (REST, with the same API key; a browser asks reportFileLink for a link that needs none); once succeeded.',
        resolve: once((run) => reportFileUrl(run.id)),
      }),
      summary: t.field({
        type: [ReportSummaryLineRef],
        nullable: true,
        description:
          'account.statement and balance.summary: opening and closing per currency; once succeeded.',
        resolve: once((run) => run.summary),
      }),
      error: t.exposeString('error', { nullable: true, description: 'Why it failed; null unless failed.' }),
    };
  },
});

const RequestedReportRef = builder
  .objectRef<{ run: ReportRun; created: boolean }>('RequestedReport')
  .implement({
    fields: (t) => ({
      report: t.field({ type: ReportRunRef, resolve: (requested) => requested.run }),
      created: t.exposeBoolean('created', {
        description:
          'False when a run of yours with the same parameters was still pending or running: that run is answered.',
      }),
    }),
  });

const ReportRunPageRef = builder.objectRef<ReportRunPage>('ReportRunPage').implement({
  fields: (t) => ({
    reports: t.field({ type: [ReportRunRef], resolve: (page) => page.reports }),
    hasMore: t.exposeBoolean('hasMore'),
    nextCursor: t.exposeString('nextCursor', {
      nullable: true,
      description: 'Ask with after: nextCursor for the next (older) page; null at the end.',
    }),
  }),
});

const ReportFileLinkRef = builder.objectRef<FileLink>('ReportFileLink').implement({
  description: `A download link to a succeeded run’s file (REST POST /reports/{id}/file-link): a GET of \`url\` without an API key answers the file until \`expiresAt\` (${REPORT_FILE_LINK_SECONDS / 60} minutes), for this run only, with the access of the account that asked. Anyone holding it can download the file until then.`,
  fields: (t) => ({
    url: t.exposeString('url', {
      description:
        '/api/v1/reports/{id}/file?expires=<unix s>&signature=<hex>, relative to the API’s origin.',
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

const RequestReportInput = builder.inputType('RequestReportInput', {
  fields: (t) => ({
    type: t.string({
      required: true,
      description: 'ledger.itemized, reconciliation.itemized, balance.summary or account.statement.',
    }),
    intervalStart: t.string({
      required: true,
      description:
        'Inclusive: an ISO 8601 instant with Z or an offset, or a local YYYY-MM-DD[THH:mm[:ss]] read in timezone.',
    }),
    intervalEnd: t.string({
      required: true,
      description: `Exclusive: after intervalStart, at most ${REPORT_MAX_INTERVAL_DAYS} days after it, not later than now.`,
    }),
    timezone: t.string({ description: 'An IANA time zone name; default UTC.' }),
    columns: t.stringList({
      description: 'A non-empty subset of the type’s columns, in order; default all.',
    }),
    format: t.string({
      description: 'csv (default), jsonl, parquet; koinly, cointracker for account.statement.',
    }),
    account: t.string({ description: 'account.statement only: the handle (default your own).' }),
  }),
});

/** REST's field names as the GraphQL arguments name them. */
const INPUT_FIELDS: Readonly<Record<string, string>> = {
  interval_start: 'input.intervalStart',
  interval_end: 'input.intervalEnd',
};
const PAGE_ARGUMENTS: Readonly<Record<string, string>> = { limit: 'first', cursor: 'after' };

/** A refusal naming a REST field names it as the GraphQL arguments do (`input.` + the field by default). */
async function namingArguments<T>(
  names: Readonly<Record<string, string>>,
  prefix: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const field = error instanceof AppError ? error.details.field : undefined;
    if (error instanceof AppError && typeof field === 'string') {
      const named = names[field] ?? `${prefix}${field}`;
      throw new AppError(error.code, error.message.replace(field, named), { ...error.details, field: named });
    }
    throw error;
  }
}

builder.queryFields((t) => ({
  report: t.field({
    type: ReportRunRef,
    description: 'One of your report runs (REST GET /reports/{id}); another account’s is NOT_FOUND.',
    authScopes: { read: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => getRun(ctx.deps, ctx.viewer!, String(id)),
  }),
  reports: t.field({
    type: ReportRunPageRef,
    description: `Your report runs, newest first (REST GET /reports): \`first\` 1 to ${REPORT_PAGE_MAX}, default 20; \`after\` a page’s nextCursor.`,
    authScopes: { read: true },
    args: { first: t.arg.int(), after: t.arg.string() },
    resolve: (_root, { first, after }, ctx) =>
      namingArguments(PAGE_ARGUMENTS, '', () =>
        listRuns(ctx.deps, ctx.viewer!, { limit: first ?? undefined, cursor: after }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  reportFileLink: t.field({
    type: ReportFileLinkRef,
    description:
      'A short-lived download link to one of your succeeded runs’ files (REST POST /reports/{id}/file-link): NOT_FOUND for another account’s run, CONFLICT until the run has succeeded.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => issueFileLink(ctx.deps, ctx.viewer!, String(id)),
  }),
  requestReport: t.field({
    type: RequestedReportRef,
    description:
      'Ask for a report run (REST POST /reports). An account.statement of your own account needs `read`; every other type, or another account’s statement, the finance role.',
    authScopes: { read: true },
    rateLimit: 'reports',
    args: { input: t.arg({ type: RequestReportInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      namingArguments(INPUT_FIELDS, 'input.', () =>
        requestRun(ctx.deps, ctx.viewer!, {
          type: input.type,
          interval_start: input.intervalStart,
          interval_end: input.intervalEnd,
          ...(input.timezone != null ? { timezone: input.timezone } : {}),
          ...(input.columns != null ? { columns: input.columns } : {}),
          ...(input.format != null ? { format: input.format } : {}),
          ...(input.account != null ? { account: input.account } : {}),
        }),
      ),
  }),
}));
