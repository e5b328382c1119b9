import { sql, type Selectable } from 'kysely';
import type {
  ReportFormat,
  ReportSpec,
  ReportSummaryLine,
  ReportType,
} from '../../domain/reports/report-kinds.js';
import { reportFileUrl, type ReportRun } from '../../domain/reports/report-run.js';
import type { ReportRunsTable } from './database.js';
import type { Db } from './db.js';

/** What a new run is asked for (its parameters, checked, and their hash). */
export type NewReportRun = Omit<ReportSpec, 'accountId'> & {
  accountId: string;
  subjectAccountId: string | null;
  paramsHash: string;
};

/** A run and, for account.statement, the internal id of the account it is about. */
export type StoredReportRun = ReportRun & { subjectAccountId: string | null };

type Row = Selectable<ReportRunsTable> & { subject_handle: string | null; created_at_exact?: string };

function toRun(row: Row): StoredReportRun {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type as ReportType,
    intervalStart: row.interval_start,
    intervalEnd: row.interval_end,
    timezone: row.timezone,
    columns: row.columns,
    format: row.format as ReportFormat,
    subjectAccountId: row.subject_account_id,
    subjectHandle: row.subject_handle,
    status: row.status,
    rowCount: row.row_count === null ? null : Number(row.row_count),
    bytes: row.bytes === null ? null : Number(row.bytes),
    sha256: row.sha256,
    fileKey: row.file_key,
    summary: (row.summary as ReportSummaryLine[] | null) ?? null,
    error: row.error,
    attempts: row.attempts,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

const withHandle = (db: Db) =>
  db
    .selectFrom('report_runs as r')
    .leftJoin('accounts as s', 's.id', 'r.subject_account_id')
    .selectAll('r')
    .select('s.handle as subject_handle');

/**
 * Inserts the run unless the account has a live (pending or running) run with the same
 * parameters, and answers the live run either way: `created` says which. Two identical requests
 * at once insert one row (the partial unique index `report_runs_live`).
 */
export async function insertOrFindLiveRun(
  db: Db,
  run: NewReportRun,
): Promise<{ run: StoredReportRun; created: boolean }> {
  // A live run found by the conflict may end before it is read: then the insert is tried again.
  for (let attempt = 0; attempt < 5; attempt++) {
    const inserted = await sql<{ id: string }>`
      INSERT INTO report_runs (account_id, type, interval_start, interval_end, timezone, columns, format,
                               subject_account_id, params_hash)
      VALUES (${run.accountId}, ${run.type}, ${run.intervalStart}, ${run.intervalEnd}, ${run.timezone},
              ${[...run.columns]}::text[], ${run.format}, ${run.subjectAccountId}, ${run.paramsHash})
      ON CONFLICT (account_id, params_hash) WHERE status IN ('pending', 'running') DO NOTHING
      RETURNING id`.execute(db);
    const id = inserted.rows[0]?.id;
    const row = await withHandle(db)
      .where('r.account_id', '=', run.accountId)
      .$call((q) =>
        id
          ? q.where('r.id', '=', id)
          : q.where('r.params_hash', '=', run.paramsHash).where('r.status', 'in', ['pending', 'running']),
      )
      .executeTakeFirst();
    if (row) return { run: toRun(row), created: id !== undefined };
  }
  throw new Error('report run: the live run kept ending before it could be read');
}

/** The run if `accountId` asked for it. */
export async function findRun(db: Db, accountId: string, id: string): Promise<StoredReportRun | undefined> {
  const row = await withHandle(db)
    .where('r.id', '=', id)
    .where('r.account_id', '=', accountId)
    .executeTakeFirst();
  return row ? toRun(row) : undefined;
}

/** The run by id, whoever asked (the worker). */
export async function findRunById(db: Db, id: string): Promise<StoredReportRun | undefined> {
  const row = await withHandle(db).where('r.id', '=', id).executeTakeFirst();
  return row ? toRun(row) : undefined;
}

/** Where a page of an account's runs continues: strictly older than this run. */
export interface RunPosition {
  /** created_at as exact text (microseconds). */
  at: string;
  id: string;
}

/** The account's runs, newest first, after `after` (exclusive); each with its position. */
export async function listRuns(
  db: Db,
  accountId: string,
  { limit, after }: { limit: number; after?: RunPosition | undefined },
): Promise<Array<{ run: StoredReportRun; position: RunPosition }>> {
  let query = withHandle(db)
    .select(
      sql<string>`to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(
        'created_at_exact',
      ),
    )
    .where('r.account_id', '=', accountId)
    .orderBy('r.created_at', 'desc')
    .orderBy('r.id', 'desc')
    .limit(limit);
  if (after) {
    // The service validated both values (an exact instant, a UUID) before they reach the casts.
    query = query.where(sql<boolean>`(r.created_at, r.id) < (${after.at}::timestamptz, ${after.id}::uuid)`);
  }
  const rows = await query.execute();
  return rows.map((row) => ({ run: toRun(row), position: { at: row.created_at_exact, id: row.id } }));
}

/**
 * Takes the run for one attempt: `running`, attempts + 1, leased for `leaseMs`. Undefined when it
 * has ended already (a job run again after its run succeeded or failed).
 */
export async function startRunAttempt(
  db: Db,
  id: string,
  leaseMs: number,
): Promise<StoredReportRun | undefined> {
  const updated = await db
    .updateTable('report_runs')
    .set({
      status: 'running',
      attempts: sql`attempts + 1`,
      started_at: sql`coalesce(started_at, now())`,
      lease_until: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
    })
    .where('id', '=', id)
    .where('status', 'in', ['pending', 'running'])
    .returning('id')
    .executeTakeFirst();
  return updated ? findRunById(db, id) : undefined;
}

/** Extends a running run's lease (its worker is still writing). */
export async function renewRunLease(db: Db, id: string, leaseMs: number): Promise<void> {
  await db
    .updateTable('report_runs')
    .set({ lease_until: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .execute();
}

/** What a succeeded run records. */
export interface RunOutcome {
  rowCount: number;
  bytes: number;
  sha256: string;
  fileKey: string;
  summary: ReportSummaryLine[] | null;
}

/**
 * Ends the run `succeeded` and stages `report.succeeded` for the account that asked, in one
 * statement (both commit or neither), its `file_url` from reportFileUrl. Only a live run ends:
 * undefined when it had ended already, and then nothing is staged, so a run ends once however many attempts reach this line.
 * `ofClosingPeriod`: a closing period counts the run among its three, read in the same statement
 * so the worker looks for periods to close only after such a run, not after every run.
 */
export async function markRunSucceeded(
  db: Db,
  id: string,
  outcome: RunOutcome,
): Promise<{ ofClosingPeriod: boolean } | undefined> {
  const { rows } = await sql<{ of_closing_period: boolean }>`
    WITH ended AS (
      UPDATE report_runs
         SET status = 'succeeded', row_count = ${outcome.rowCount}, bytes = ${outcome.bytes},
             sha256 = ${outcome.sha256}, file_key = ${outcome.fileKey},
             summary = ${outcome.summary === null ? null : JSON.stringify(outcome.summary)}::jsonb,
             error = NULL, lease_until = NULL, finished_at = now()
       WHERE id = ${id} AND status IN ('pending', 'running')
      RETURNING id, account_id, type, row_count, sha256),
    staged AS (
      INSERT INTO event_staging (account_id, type, data, dedupe_key)
      SELECT account_id, 'report.succeeded',
             jsonb_build_object('id', id, 'type', type, 'status', 'succeeded', 'row_count', row_count,
                                'sha256', sha256, 'file_url', ${reportFileUrl(id)}::text),
             'report.succeeded:' || id
        FROM ended)
    SELECT EXISTS (
             SELECT 1 FROM finance_periods p
              WHERE p.status = 'closing'
                AND ended.id IN (p.balance_run_id, p.ledger_run_id, p.reconciliation_run_id))
             AS of_closing_period
      FROM ended`.execute(db);
  const row = rows[0];
  return row ? { ofClosingPeriod: row.of_closing_period } : undefined;
}

/** As markRunSucceeded, for a run that failed: `failed` with `error`, and `report.failed`. */
export async function markRunFailed(db: Db, id: string, error: string): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    WITH ended AS (
      UPDATE report_runs
         SET status = 'failed', error = ${error}, lease_until = NULL, finished_at = now()
       WHERE id = ${id} AND status IN ('pending', 'running')
      RETURNING id, account_id, type, error)
    INSERT INTO event_staging (account_id, type, data, dedupe_key)
    SELECT account_id, 'report.failed',
           jsonb_build_object('id', id, 'type', type, 'status', 'failed', 'error', error),
           'report.failed:' || id
      FROM ended
    RETURNING account_id`.execute(db);
  return rows.length > 0;
}

/**
 * Runs that may have no worker: every pending run, and running runs whose lease ran out (their
 * worker died), oldest first.
 */
export async function unfinishedRuns(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('report_runs')
    .select('id')
    .where((eb) =>
      eb.or([
        eb('status', '=', 'pending'),
        eb.and([eb('status', '=', 'running'), eb('lease_until', '<', sql<Date>`now()`)]),
      ]),
    )
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
