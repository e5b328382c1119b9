import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Db } from '../../adapters/postgres/db.js';
import { findFrozenRunId, isFrozenRun } from '../../adapters/postgres/finance-periods.repository.js';
import {
  findRun,
  findRunById,
  insertOrFindLiveRun,
  listRuns as listRunRows,
} from '../../adapters/postgres/report-runs.repository.js';
import type { ReportsQueue } from '../../adapters/redis/reports-queue.js';
import type { AccountStore } from '../../domain/accounts/accounts.service.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { parsePageLimit } from '../../domain/pagination/page-limit.js';
import { decodePosition, encodePosition } from '../../domain/posts/read-cursors.js';
import { PERIOD_REPORT_TYPES } from '../../domain/reports/finance-period.js';
import type { ReportSpec } from '../../domain/reports/report-kinds.js';
import {
  checkReportAccess,
  isReportId,
  parseReportRequest,
  reportContentType,
  reportFileName,
  reportParamsHash,
} from '../../domain/reports/report-request.js';
import type { ReportRun } from '../../domain/reports/report-run.js';
import type { ReportStore } from './report-store.js';

/*
 * Report runs (issue 50 item 1): the one core REST /reports and the GraphQL report fields call.
 * A run is asked for here (checked, deduped by its parameters while live, queued), made by the
 * worker role (run-report.ts) and read back here, by the account that asked only.
 */

export interface ReportRunDeps {
  db: Db;
  logger: Logger;
  accounts: Pick<AccountStore, 'byHandle'>;
  reportsQueue: Pick<ReportsQueue, 'enqueue'>;
  reportStore: Pick<ReportStore, 'open'>;
  cursorSecret: string;
}

type Caller = Pick<Viewer, 'accountId' | 'handle' | 'role' | 'scopes'>;

export const REPORT_PAGE_DEFAULT = 20;
export const REPORT_PAGE_MAX = 100;

/**
 * Asks for a run. Input first (400 naming the field), then access (403), then the account a
 * statement names (400 when no such account). While the caller has a live run with the same
 * parameters, that run is answered (`created: false`) and nothing new is queued.
 */
export async function requestRun(
  deps: ReportRunDeps,
  caller: Caller,
  body: unknown,
  now: Date = new Date(),
): Promise<{ run: ReportRun; created: boolean }> {
  const request = parseReportRequest(body, now);
  checkReportAccess(caller, request);
  let subject: string | null = null;
  if (request.type === 'account.statement') {
    if (request.account === null || request.account === caller.handle) {
      subject = caller.accountId;
    } else {
      const account = await deps.accounts.byHandle(request.account);
      if (!account) {
        throw new AppError('invalid_request', `account: no account has the handle ${request.account}`, {
          field: 'account',
        });
      }
      subject = account.id;
    }
  }
  const { account: _named, ...params } = request;
  void _named;
  const spec: ReportSpec = { ...params, accountId: subject };
  const paramsHash = reportParamsHash(spec);
  // A closed period froze a run with exactly these parameters (whoever asked for it): that run,
  // the same id and file, is the answer, so a closed period's report never changes. Periods freeze
  // only their three types in CSV: other requests skip the lookup.
  const mayBeFrozen = spec.format === 'csv' && (PERIOD_REPORT_TYPES as readonly string[]).includes(spec.type);
  const frozenId = mayBeFrozen ? await findFrozenRunId(deps.db, paramsHash) : undefined;
  const frozen = frozenId === undefined ? undefined : await findRunById(deps.db, frozenId);
  if (frozen) return { run: publicRun(frozen), created: false };
  const { run, created } = await insertOrFindLiveRun(deps.db, {
    ...params,
    accountId: caller.accountId,
    subjectAccountId: subject,
    paramsHash,
  });
  if (created) {
    try {
      await deps.reportsQueue.enqueue(run.id);
    } catch (error) {
      // The run is recorded: the worker's resume sweep queues it (on its start, then every 30 s).
      deps.logger.warn({ err: error, reportId: run.id }, 'report run not queued; the resume sweep will');
    }
  }
  return { run: publicRun(run), created };
}

/**
 * The caller's run (or, for finance, a run a closed period froze); another account's run, or an id
 * that is not a UUID, is 404 as none is.
 */
export async function getRun(
  deps: Pick<ReportRunDeps, 'db'>,
  caller: Pick<Caller, 'accountId' | 'role'>,
  id: string,
): Promise<ReportRun> {
  let run = isReportId(id) ? await findRun(deps.db, caller.accountId, id) : undefined;
  // A closed period's frozen runs are every finance account's (requestRun answers them to all).
  if (!run && isReportId(id) && (caller.role === 'finance' || caller.role === 'admin')) {
    if (await isFrozenRun(deps.db, id)) run = await findRunById(deps.db, id);
  }
  if (!run) throw new AppError('not_found', 'No such report');
  return publicRun(run);
}

export interface ReportRunPage {
  reports: ReportRun[];
  hasMore: boolean;
  nextCursor: string | null;
}

const cursorScope = (accountId: string) => `reports:${accountId}`;

/** The caller's runs, newest first, `limit` (1-100, default 20) a page, from a signed cursor. */
export async function listRuns(
  deps: Pick<ReportRunDeps, 'db' | 'cursorSecret'>,
  caller: Caller,
  query: { limit?: unknown; cursor?: string | null | undefined },
): Promise<ReportRunPage> {
  const limit = parsePageLimit(query.limit, { max: REPORT_PAGE_MAX, fallback: REPORT_PAGE_DEFAULT });
  const after =
    query.cursor === undefined || query.cursor === null
      ? undefined
      : decodePosition(deps.cursorSecret, cursorScope(caller.accountId), query.cursor);
  const rows = await listRunRows(deps.db, caller.accountId, { limit: limit + 1, after });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const hasMore = rows.length > limit;
  return {
    reports: page.map((row) => publicRun(row.run)),
    hasMore,
    nextCursor:
      hasMore && last
        ? encodePosition(deps.cursorSecret, cursorScope(caller.accountId), last.position)
        : null,
  };
}

/** A run's file as the download sends it: a stream, with what its headers say. */
export interface RunFile {
  run: ReportRun;
  stream: Readable;
  bytes: number;
  contentType: string;
  fileName: string;
}

/** A succeeded run's file as a stream, with what the download's headers say. 409 before then. */
export async function openRunFile(
  deps: Pick<ReportRunDeps, 'db' | 'reportStore'>,
  caller: Pick<Caller, 'accountId' | 'role'>,
  id: string,
): Promise<RunFile> {
  return openSucceededRunFile(deps, await getRun(deps, caller, id));
}

/** 409 `conflict` unless the run has succeeded (its file exists only then). */
export function requireSucceeded(run: ReportRun): asserts run is ReportRun & { fileKey: string } {
  if (run.status !== 'succeeded' || run.fileKey === null) {
    throw new AppError('conflict', `The report is ${run.status}: its file exists once it has succeeded`);
  }
}

/** The file of a run the caller's access was already checked for (openRunFile, a download link). */
export async function openSucceededRunFile(
  deps: Pick<ReportRunDeps, 'reportStore'>,
  run: ReportRun,
): Promise<RunFile> {
  requireSucceeded(run);
  const file = await deps.reportStore.open(run.fileKey);
  if (!file) throw new AppError('internal', 'The report file is missing from the report store');
  return {
    run,
    stream: file.stream,
    bytes: file.bytes,
    contentType: reportContentType(run.format),
    fileName: reportFileName(run),
  };
}

/** The run without what only the worker needs. */
function publicRun(run: ReportRun & { subjectAccountId?: string | null }): ReportRun {
  const { subjectAccountId: _subject, ...rest } = run;
  void _subject;
  return rest;
}
