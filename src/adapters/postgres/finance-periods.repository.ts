import { sql, type Selectable } from 'kysely';
import type { FinancePeriodsTable } from './database.js';
import type { Db } from './db.js';

/** A period's row with its three runs' state (null before a close asked for them). */
export type PeriodRow = Selectable<FinancePeriodsTable> & {
  runs: Array<{ id: string; type: string; status: string; sha256: string | null; row_count: string | null }>;
};

const RUN_COLUMNS = ['balance_run_id', 'ledger_run_id', 'reconciliation_run_id'] as const;

async function withRuns(db: Db, rows: Array<Selectable<FinancePeriodsTable>>): Promise<PeriodRow[]> {
  const ids = rows.flatMap((row) => RUN_COLUMNS.map((c) => row[c]).filter((id): id is string => id !== null));
  const runs = ids.length
    ? await db
        .selectFrom('report_runs')
        .select(['id', 'type', 'status', 'sha256', sql<string | null>`row_count::text`.as('row_count')])
        .where('id', 'in', ids)
        .execute()
    : [];
  const byId = new Map(runs.map((run) => [run.id, run]));
  return rows.map((row) => ({
    ...row,
    runs: RUN_COLUMNS.map((c) => (row[c] ? byId.get(row[c]) : undefined)).filter(
      (run): run is NonNullable<typeof run> => run !== undefined,
    ),
  }));
}

export async function findPeriod(db: Db, period: string): Promise<PeriodRow | undefined> {
  const row = await db
    .selectFrom('finance_periods')
    .selectAll()
    .where('period', '=', period)
    .executeTakeFirst();
  return row ? (await withRuns(db, [row]))[0] : undefined;
}

/** Every period finance has closed (or is closing, or reopened), newest period first. */
export async function listPeriodRows(db: Db): Promise<PeriodRow[]> {
  const rows = await db
    .selectFrom('finance_periods')
    .selectAll()
    .orderBy('period_start', 'desc')
    .orderBy('period')
    .limit(1000)
    .execute();
  return withRuns(db, rows);
}

/**
 * Marks the period `closing` (a new row, or an `open` one after a reopen); undefined when it is
 * already closing or closed (the caller reads it). Two closes at once: one wins.
 */
export async function beginClosing(
  db: Db,
  p: { period: string; timezone: string; start: Date; end: Date; closedBy: string },
): Promise<Selectable<FinancePeriodsTable> | undefined> {
  const closing = {
    timezone: p.timezone,
    period_start: p.start,
    period_end: p.end,
    status: 'closing' as const,
    closed_by: p.closedBy,
    closing_at: sql<Date>`now()`,
  };
  return db
    .insertInto('finance_periods')
    .values({ period: p.period, ...closing })
    .onConflict((oc) =>
      oc
        .column('period')
        .doUpdateSet({
          ...closing,
          closed_at: null,
          balance_run_id: null,
          ledger_run_id: null,
          reconciliation_run_id: null,
        })
        .where('finance_periods.status', '=', 'open'),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Records the closing period's runs (while it is still closing). */
export async function setPeriodRuns(
  db: Db,
  periodId: string,
  runs: { balance: string; ledger: string; reconciliation: string },
): Promise<void> {
  await db
    .updateTable('finance_periods')
    .set({
      balance_run_id: runs.balance,
      ledger_run_id: runs.ledger,
      reconciliation_run_id: runs.reconciliation,
    })
    .where('id', '=', periodId)
    .where('status', '=', 'closing')
    .execute();
}

/** Closing periods whose three runs succeeded. */
export async function closingPeriodsReady(db: Db): Promise<Array<Selectable<FinancePeriodsTable>>> {
  const rows = await db.selectFrom('finance_periods').selectAll().where('status', '=', 'closing').execute();
  const ready = await withRuns(db, rows);
  return ready.filter((row) => row.runs.length === 3 && row.runs.every((run) => run.status === 'succeeded'));
}

/**
 * Closes a closing period in one transaction: its non-matched verdicts recorded, `closed`, and
 * `period.closed` staged for every finance and admin account. False when it was not closing.
 */
export async function markPeriodClosed(
  db: Db,
  periodId: string,
  verdicts: ReadonlyArray<{ movementId: string; signature: string; status: string }>,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const closed = await trx
      .updateTable('finance_periods')
      .set({ status: 'closed', closed_at: sql<Date>`now()` })
      .where('id', '=', periodId)
      .where('status', '=', 'closing')
      .returning(['period', 'timezone', 'closed_at'])
      .executeTakeFirst();
    if (!closed) return false;
    await trx.deleteFrom('finance_period_verdicts').where('period_id', '=', periodId).execute();
    if (verdicts.length) {
      await trx
        .insertInto('finance_period_verdicts')
        .values(
          verdicts.map((v) => ({
            period_id: periodId,
            movement_id: v.movementId,
            signature: v.signature,
            status: v.status,
          })),
        )
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
    await stagePeriodEvent(
      trx,
      'period.closed',
      {
        period: closed.period,
        timezone: closed.timezone,
        status: 'closed',
        closed_at: closed.closed_at?.toISOString() ?? null,
      },
      `period.closed:${periodId}:${closed.closed_at?.toISOString() ?? ''}`,
    );
    return true;
  });
}

/** Reopens a closed (or closing) period and stages `period.reopened`; undefined when it was open. */
export async function markPeriodReopened(
  db: Db,
  period: string,
  by: { accountId: string; handle: string },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('finance_periods')
      .set({ status: 'open', reopened_at: sql<Date>`now()`, reopened_by: by.accountId })
      .where('period', '=', period)
      .where('status', 'in', ['closing', 'closed'])
      .returning(['id', 'period', 'timezone', 'reopened_at'])
      .executeTakeFirst();
    if (!row) return false;
    const at = row.reopened_at?.toISOString() ?? '';
    await stagePeriodEvent(
      trx,
      'period.reopened',
      { period: row.period, timezone: row.timezone, status: 'open', reopened_at: at, reopened_by: by.handle },
      `period.reopened:${row.id}:${at}`,
    );
    return true;
  });
}

/** Stages a period event for every account with the finance or admin role. */
async function stagePeriodEvent(
  db: Db,
  type: 'period.closed' | 'period.reopened',
  data: Record<string, unknown>,
  dedupeKey: string,
): Promise<void> {
  await sql`
    INSERT INTO event_staging (account_id, type, data, dedupe_key)
    SELECT a.id, ${type}, ${JSON.stringify(data)}::jsonb, ${dedupeKey}
      FROM accounts a
     WHERE a.role IN ('finance', 'admin')
     ORDER BY a.id`.execute(db);
}

/** A run frozen by a closed period with exactly these parameters (any account's), if any. */
export async function findFrozenRunId(db: Db, paramsHash: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('report_runs as r')
    .innerJoin('finance_periods as p', (join) =>
      join.on((eb) =>
        eb.or([
          eb('p.balance_run_id', '=', eb.ref('r.id')),
          eb('p.ledger_run_id', '=', eb.ref('r.id')),
          eb('p.reconciliation_run_id', '=', eb.ref('r.id')),
        ]),
      ),
    )
    .select('r.id')
    .where('p.status', '=', 'closed')
    .where('r.params_hash', '=', paramsHash)
    .where('r.status', '=', 'succeeded')
    .executeTakeFirst();
  return row?.id;
}

/** Whether `runId` is a run a closed period froze (readable by every finance account). */
export async function isFrozenRun(db: Db, runId: string): Promise<boolean> {
  const row = await db
    .selectFrom('finance_periods')
    .select('id')
    .where('status', '=', 'closed')
    .where((eb) =>
      eb.or([
        eb('balance_run_id', '=', runId),
        eb('ledger_run_id', '=', runId),
        eb('reconciliation_run_id', '=', runId),
      ]),
    )
    .executeTakeFirst();
  return row !== undefined;
}

/** Payments of [start, end) whose outbox row is not finalized (nor failed) yet. */
export async function unfinalizedPaymentCount(db: Db, start: Date, end: Date): Promise<number> {
  const row = await db
    .selectFrom('chain_transactions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('created_at', '>=', start)
    .where('created_at', '<', end)
    .where('status', 'in', ['signed', 'sent', 'confirmed'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Closed periods' windows (the reconciler asks once a round; there are few). */
export async function closedPeriodWindows(
  db: Db,
): Promise<Array<{ id: string; period: string; start: Date; end: Date }>> {
  const rows = await db
    .selectFrom('finance_periods')
    .select(['id', 'period', 'period_start', 'period_end'])
    .where('status', '=', 'closed')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    period: row.period,
    start: row.period_start,
    end: row.period_end,
  }));
}

/** The frozen (non-matched) verdicts of these movements in these periods: `${movement}` → status. */
export async function frozenVerdicts(
  db: Db,
  periodIds: readonly string[],
  movementIds: readonly string[],
): Promise<Map<string, string>> {
  if (periodIds.length === 0 || movementIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('finance_period_verdicts')
    .select(['movement_id', 'status'])
    .where('period_id', 'in', periodIds)
    .where('movement_id', 'in', movementIds)
    .execute();
  return new Map(rows.map((row) => [row.movement_id, row.status]));
}
