import type { Logger } from 'pino';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  markRunFailed,
  markRunSucceeded,
  renewRunLease,
  startRunAttempt,
  unfinishedRuns,
} from '../../adapters/postgres/report-runs.repository.js';
import type { ReportsQueue } from '../../adapters/redis/reports-queue.js';
import { AppError } from '../../domain/errors.js';
import type { ReportFormat, ReportSpec } from '../../domain/reports/report-kinds.js';
import { reportFileExtension } from '../../domain/reports/report-request.js';
import type { ReportStore } from './report-store.js';
import { completeClosingPeriods } from './finance-periods.js';
import { writeReport } from './write-report.js';

/*
 * Making a run (the worker role's `reports` queue; job id = run id). The run's state lives in
 * Postgres, the queue only schedules: an attempt takes the run (`running`, attempts + 1, a lease
 * it renews while it writes), writes the file through writeReport into the report store, and ends
 * the run in one statement with its event (`report.succeeded` or `report.failed`). A worker killed
 * mid-way leaves the run `running` with a lease that runs out: BullMQ's stalled-job check or the
 * resume sweep below runs it again; the file is written again (to a new partial file), the final
 * link happens once, and the run ends once (only a live run ends).
 */

export interface RunReportDeps {
  db: Db;
  clickhouse: ClickHouse;
  logger: Logger;
  reportStore: ReportStore;
  /**
   * The platform's chain (its mints): balance.summary's `chain_closing` reads the configured mints,
   * which `platform_wallets` does not record when they are given (mainnet USDC). Asked only for
   * that type, so the other reports run while the chain is away.
   */
  bootstrapChain?: () => Promise<{ usdcMint: { toBase58(): string }; nativeMint: { toBase58(): string } }>;
}

/** How long a running run is vouched for without a renewal; renewed every third of it. */
export const REPORT_LEASE_MS = 60_000;
/** Attempts (each start, a crash's restart included) after which a run is failed for good. */
export const MAX_RUN_ATTEMPTS = 6;

/** How one job of a run ended. */
export type RunAttemptOutcome = 'succeeded' | 'failed' | 'already-ended';

/**
 * One attempt at run `runId`. `finalTry`: the queue will not try this job again, so a retryable
 * failure fails the run instead of being thrown back to the queue. Throws only a retryable failure
 * on a try that is not the last one (BullMQ then retries it with backoff).
 */
export async function runReportAttempt(
  deps: RunReportDeps,
  runId: string,
  options: { finalTry: boolean; signal?: AbortSignal },
): Promise<RunAttemptOutcome> {
  const run = await startRunAttempt(deps.db, runId, REPORT_LEASE_MS);
  if (!run) return 'already-ended';
  const log = deps.logger.child({ reportId: run.id, type: run.type, attempt: run.attempts });
  if (run.attempts > MAX_RUN_ATTEMPTS) {
    await markRunFailed(deps.db, run.id, `gave up after ${MAX_RUN_ATTEMPTS} attempts`);
    log.warn('report run failed: too many attempts');
    return 'failed';
  }
  const spec: ReportSpec = {
    type: run.type,
    intervalStart: run.intervalStart,
    intervalEnd: run.intervalEnd,
    timezone: run.timezone,
    columns: run.columns,
    format: run.format,
    accountId: run.subjectAccountId,
  };
  const renew = setInterval(() => {
    renewRunLease(deps.db, run.id, REPORT_LEASE_MS).catch((err: unknown) =>
      log.warn({ err }, 'report run lease not renewed'),
    );
  }, REPORT_LEASE_MS / 3);
  renew.unref();
  try {
    const mints = await mintsFor(deps, spec);
    const stored = await deps.reportStore.write(fileKeyOf(run.id, run.format), (sink) =>
      writeReport({ clickhouse: deps.clickhouse, db: deps.db, ...mints }, spec, sink, options.signal),
    );
    const ended = await markRunSucceeded(deps.db, run.id, {
      rowCount: stored.result.rowCount,
      bytes: stored.bytes,
      sha256: stored.sha256,
      fileKey: fileKeyOf(run.id, run.format),
      summary: stored.result.summary,
    });
    log.info(
      { rows: stored.result.rowCount, bytes: stored.bytes, ended: ended !== undefined },
      'report run succeeded',
    );
    if (ended?.ofClosingPeriod) {
      // The run may be the last of a closing period's three (docs/reports.md "Closing a period").
      // A failure here leaves the period closing: the next read of it, or the next close, closes it.
      await completeClosingPeriods(deps).catch((err: unknown) =>
        log.warn({ err }, 'closing periods not checked after the run'),
      );
    }
    return ended ? 'succeeded' : 'already-ended';
  } catch (error) {
    const retryable = isRetryableReportError(error);
    if (retryable && !options.finalTry) {
      log.warn({ err: error }, 'report run failed; retrying with backoff');
      throw error;
    }
    log.warn({ err: error }, 'report run failed');
    await markRunFailed(deps.db, run.id, publicReason(error, retryable));
    return 'failed';
  } finally {
    clearInterval(renew);
  }
}

/** One file per run: the run's id and the format's extension. */
export function fileKeyOf(runId: string, format: ReportFormat): string {
  return `${runId}.${reportFileExtension(format)}`;
}

const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/**
 * A failure worth trying again: a store that could not be reached (ClickHouse or Postgres down),
 * or a report bucket that answered 5xx or 429 (an S3 SlowDown or InternalError after the SDK's own
 * retries: the AWS SDK puts the status in `$metadata`).
 */
export function isRetryableReportError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code && RETRYABLE_CODES.has(code)) return true;
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== undefined && (status >= 500 || status === 429)) return true;
    if (e instanceof AppError && (e.code === 'unavailable' || e.code === 'analytics_unavailable'))
      return true;
    if (/socket hang up|timeout|connect ECONNREFUSED|Connection terminated/i.test(e.message)) return true;
  }
  return false;
}

/** What `error` says to the account (fixed phrases: never a host, a query or a stack). */
function publicReason(error: unknown, retryable: boolean): string {
  if (retryable) return 'the analytics store could not be reached; request the report again later';
  if (error instanceof AppError) return error.message;
  return 'the report could not be written';
}

/**
 * Hands every run that may have lost its job back to the queue (pending runs, and running runs
 * whose lease ran out): on the worker's start and on a slow timer. Answers how many it queued.
 */
export async function resumeReportRuns(
  deps: { db: Db; reportsQueue: Pick<ReportsQueue, 'resubmit'> },
  limit = 500,
): Promise<number> {
  let queued = 0;
  for (const id of await unfinishedRuns(deps.db, limit)) {
    if ((await deps.reportsQueue.resubmit(id)) !== 'queued') queued++;
  }
  return queued;
}

async function mintsFor(
  deps: RunReportDeps,
  spec: ReportSpec,
): Promise<{ mints?: { usdc: string; native: string } }> {
  if (spec.type !== 'balance.summary' || !deps.bootstrapChain) return {};
  const chain = await deps.bootstrapChain();
  return { mints: { usdc: chain.usdcMint.toBase58(), native: chain.nativeMint.toBase58() } };
}
