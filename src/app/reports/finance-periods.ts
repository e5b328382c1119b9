import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  beginClosing,
  closingPeriodsReady,
  findPeriod,
  listPeriodRows,
  markPeriodClosed,
  markPeriodReopened,
  setPeriodRuns,
  unfinalizedPaymentCount,
  type PeriodRow,
} from '../../adapters/postgres/finance-periods.repository.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import {
  BLOCKING_VERDICTS,
  parseCloseBody,
  parsePeriod,
  PERIOD_REPORT_TYPES,
  type FinancePeriod,
  type PeriodBlocker,
  type PeriodWindow,
} from '../../domain/reports/finance-period.js';
import type { ReportType } from '../../domain/reports/report-kinds.js';
import { intervalParams } from './report-writers/report-query.js';
import { verdictsQuery } from './report-writers/reconciliation-itemized.js';
import { requestRun, type ReportRunDeps } from './report-runs.js';

/*
 * Finance periods (issue 50 item 3; docs/reports.md "Closing a period"). Closing checks the period
 * (ended, nothing open in it), asks for its three runs through the report-run service, and the
 * period turns `closed` once the three succeeded (completeClosingPeriods: the worker calls it when
 * a run succeeds, and a read of a closing period calls it too). A closed period's runs are frozen:
 * requestRun answers them for the same parameters, from any finance account.
 */

export type PeriodDeps = ReportRunDeps & { clickhouse: ClickHouse };
type Caller = Pick<Viewer, 'accountId' | 'handle' | 'role' | 'scopes'>;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

function requireFinance(caller: Caller): void {
  if (caller.role !== 'finance' && caller.role !== 'admin') {
    throw new AppError('forbidden', 'Finance periods need the finance or admin role');
  }
}

/**
 * Closes `period`: 400 (period, timezone, body), 403 (role), 409 `period_not_ended`, 409
 * `close_blocked` with the blockers, else the runs are asked for and the period is `closing`
 * (`accepted`). A closing or closed period in the same timezone answers itself (`accepted` false
 * once closed); another timezone is 409 `conflict`.
 */
export async function closePeriod(
  deps: PeriodDeps,
  caller: Caller,
  periodRaw: string,
  body: unknown,
  now: Date = new Date(),
): Promise<{ period: FinancePeriod; accepted: boolean }> {
  const { timezone } = parseCloseBody(body);
  const window = parsePeriod(periodRaw, timezone);
  requireFinance(caller);
  const existing = await findPeriod(deps.db, window.period);
  if (existing && existing.status !== 'open') {
    if (existing.timezone !== window.timezone) {
      throw new AppError(
        'conflict',
        `${window.period} is ${existing.status} in ${existing.timezone}; reopen it to close it in ${window.timezone}`,
      );
    }
    if (existing.status === 'closed') return { period: toPeriod(existing), accepted: false };
    // Closing: a run that failed is asked for again; the others are kept.
    if (existing.runs.length < 3 || existing.runs.some((run) => run.status === 'failed')) {
      await requestPeriodRuns(deps, caller, existing.id, window, now);
    }
    await completeClosingPeriods(deps);
    return { period: toPeriod((await findPeriod(deps.db, window.period)) ?? existing), accepted: true };
  }
  if (window.end.getTime() > now.getTime()) {
    throw new AppError(
      'period_not_ended',
      `${window.period} ends at ${window.end.toISOString()}; close it after`,
    );
  }
  const blockers = await periodBlockers(deps, window);
  if (blockers.length > 0) {
    throw new AppError(
      'close_blocked',
      `${window.period} has open items: ${blockers.map((b) => `${b.count} ${b.status}`).join(', ')}`,
      { blockers },
    );
  }
  const started = await beginClosing(deps.db, { ...window, closedBy: caller.accountId });
  if (started) await requestPeriodRuns(deps, caller, started.id, window, now);
  await completeClosingPeriods(deps);
  const row = await findPeriod(deps.db, window.period);
  if (!row) throw new AppError('internal', 'The period was not recorded');
  return { period: toPeriod(row), accepted: row.status !== 'closed' || started !== undefined };
}

async function requestPeriodRuns(
  deps: PeriodDeps,
  caller: Caller,
  periodId: string,
  window: PeriodWindow,
  now: Date,
): Promise<void> {
  const ids: string[] = [];
  for (const type of PERIOD_REPORT_TYPES) {
    const { run } = await requestRun(
      deps,
      caller,
      {
        type,
        interval_start: window.start.toISOString(),
        interval_end: window.end.toISOString(),
        timezone: window.timezone,
        format: 'csv',
      },
      now,
    );
    ids.push(run.id);
  }
  const [balance, ledger, reconciliation] = ids as [string, string, string];
  await setPeriodRuns(deps.db, periodId, { balance, ledger, reconciliation });
}

/**
 * What keeps `window` from closing: payments of the period not finalized (the outbox, as
 * `not_finalized`), and the latest verdicts per movement in the period (the rows its
 * reconciliation.itemized would list) that are pending, missing, amount_mismatch, wrong_party or
 * unexplained. Only statuses with a count are listed.
 */
export async function periodBlockers(
  deps: { db: Db; clickhouse: ClickHouse },
  window: PeriodWindow,
): Promise<PeriodBlocker[]> {
  const blockers: PeriodBlocker[] = [];
  const unfinalized = await unfinalizedPaymentCount(deps.db, window.start, window.end);
  if (unfinalized > 0) blockers.push({ status: 'not_finalized', count: unfinalized });
  const ch = deps.clickhouse;
  const statuses = BLOCKING_VERDICTS.map((s) => `'${s}'`).join(', ');
  const counts = new Map<string, number>();
  for await (const row of ch.streamRows<{ status: string; n: string }>({
    query: `SELECT r_status AS status, toString(count()) AS n
              FROM (${verdictsQuery(ch.table('reconciliation'), ch.table('ledger_legs'), ch.table('chain_transactions'))})
             WHERE r_status IN (${statuses})
             GROUP BY r_status`,
    query_params: periodParams(window),
  })) {
    counts.set(row.status, Number(row.n));
  }
  for (const status of BLOCKING_VERDICTS) {
    const count = counts.get(status);
    if (count) blockers.push({ status, count });
  }
  return blockers;
}

function periodParams(window: PeriodWindow): Record<string, string> {
  return intervalParams({
    type: 'reconciliation.itemized',
    intervalStart: window.start,
    intervalEnd: window.end,
    timezone: window.timezone,
    columns: [],
    format: 'csv',
    accountId: null,
  });
}

/**
 * Closes every closing period whose three runs succeeded: records the period's verdicts that were
 * not `matched` (what the reconciler compares later verdicts with), marks it `closed` and stages
 * `period.closed`, in one transaction. Safe to call from anywhere, any number of times.
 */
export async function completeClosingPeriods(deps: { db: Db; clickhouse: ClickHouse }): Promise<number> {
  let closed = 0;
  for (const row of await closingPeriodsReady(deps.db)) {
    const window = {
      period: row.period,
      timezone: row.timezone,
      start: row.period_start,
      end: row.period_end,
    };
    const ch = deps.clickhouse;
    const verdicts: Array<{ movementId: string; signature: string; status: string }> = [];
    for await (const v of ch.streamRows<{ r_movement: string; r_swap_tx: string; r_status: string }>({
      query: `SELECT r_movement, r_swap_tx, r_status
                FROM (${verdictsQuery(ch.table('reconciliation'), ch.table('ledger_legs'), ch.table('chain_transactions'))})
               WHERE r_status != 'matched' AND r_movement != '${NIL_UUID}'`,
      query_params: periodParams(window),
    })) {
      verdicts.push({ movementId: v.r_movement, signature: v.r_swap_tx, status: v.r_status });
    }
    if (await markPeriodClosed(deps.db, row.id, verdicts)) closed++;
  }
  return closed;
}

/** A period's state; a period never closed is `open` with no reports. */
export async function getPeriod(deps: PeriodDeps, caller: Caller, periodRaw: string): Promise<FinancePeriod> {
  const window = parsePeriod(periodRaw, undefined);
  requireFinance(caller);
  let row = await findPeriod(deps.db, window.period);
  if (row?.status === 'closing' && (await completeClosingPeriods(deps)) > 0) {
    row = await findPeriod(deps.db, window.period);
  }
  return row ? toPeriod(row) : openPeriod(window);
}

/** Every period that was ever closed (or is closing), newest first. */
export async function listPeriods(deps: PeriodDeps, caller: Caller): Promise<FinancePeriod[]> {
  requireFinance(caller);
  const rows = await listPeriodRows(deps.db);
  // Read again only when a closing period closed just now (as getPeriod does).
  const closed = rows.some((row) => row.status === 'closing') ? await completeClosingPeriods(deps) : 0;
  return (closed > 0 ? await listPeriodRows(deps.db) : rows).map(toPeriod);
}

/** Reopens a closing or closed period (admin only) and writes `period.reopened`; 409 when open. */
export async function reopenPeriod(
  deps: PeriodDeps,
  caller: Caller,
  periodRaw: string,
): Promise<FinancePeriod> {
  const window = parsePeriod(periodRaw, undefined);
  if (caller.role !== 'admin') throw new AppError('forbidden', 'Reopening a period needs the admin role');
  const reopened = await markPeriodReopened(deps.db, window.period, {
    accountId: caller.accountId,
    handle: caller.handle,
  });
  if (!reopened) throw new AppError('conflict', `${window.period} is open: there is nothing to reopen`);
  const row = await findPeriod(deps.db, window.period);
  return row ? toPeriod(row) : openPeriod(window);
}

function openPeriod(window: PeriodWindow): FinancePeriod {
  return {
    period: window.period,
    timezone: window.timezone,
    periodStart: window.start,
    periodEnd: window.end,
    status: 'open',
    closedAt: null,
    reopenedAt: null,
    reports: [],
  };
}

function toPeriod(row: PeriodRow): FinancePeriod {
  return {
    period: row.period,
    timezone: row.timezone,
    periodStart: row.period_start,
    periodEnd: row.period_end,
    status: row.status,
    closedAt: row.status === 'closed' ? row.closed_at : null,
    reopenedAt: row.reopened_at,
    reports:
      row.status === 'open'
        ? []
        : row.runs.map((run) => ({
            type: run.type as ReportType,
            id: run.id,
            sha256: run.sha256,
            rowCount: run.row_count === null ? null : Number(run.row_count),
          })),
  };
}
