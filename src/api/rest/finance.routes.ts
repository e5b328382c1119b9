import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import {
  parseDay,
  reconciliationExceptions,
  reconciliationSummary,
  type ReconciliationRow,
} from '../../app/analytics/analytics-reads.js';
import { formatMicroUsd } from '../../domain/money/usd.js';
import { RECONCILIATION_STATUSES } from '../../domain/reconciliation/reconciliation.js';
import { usdNumber } from '../http-views.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { requireFinance } from '../../domain/auth/access-rules.js';
import { EXCEPTION_FIELDS, reconciliationAnswer } from './finance-schemas.js';
import { authErrors, errorBody } from './schemas.js';

/** A day's report lists at most this many verdicts (CSV) or exceptions (JSON). */
const REPORT_MAX_ROWS = 100_000;

const CSV_COLUMNS = ['ledger_day', ...EXCEPTION_FIELDS] as const;

/**
 * GET /finance/reconciliation?date=YYYY-MM-DD (finance or admin role, scope read): the day's
 * ledger vs chain totals, verdict counts, payments by outbox state and exceptions as JSON (the
 * exceptions include the day's payments not finalized 5 minutes after signing, `not_finalized`,
 * read from the outbox now); with `Accept: text/csv`, every verdict the reconciler recorded for the
 * day as CSV (one row per ledger movement), the proof finance files.
 */
export function registerFinanceRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).get(
    '/finance/reconciliation',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getReconciliation',
        summary: "A day's reconciliation report (finance role); CSV with Accept: text/csv",
        tags: ['finance'],
        querystring: {
          type: 'object',
          required: ['date'],
          properties: { date: { type: 'string', description: 'The ledger day, YYYY-MM-DD (UTC)' } },
        },
        response: { 200: reconciliationAnswer, 400: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      const viewer = request.viewer!;
      requireFinance(viewer, 'The reconciliation report');
      const day = parseDay(request.query.date, 'date');
      const wantsCsv = /\btext\/csv\b/.test(request.headers.accept ?? '');
      const { rows } = await reconciliationExceptions(deps, {
        day,
        first: REPORT_MAX_ROWS,
        includeMatched: wantsCsv,
      });
      if (wantsCsv) {
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="reconciliation-${day}.csv"`)
          .send(toCsv(rows));
      }
      const [summary] = await reconciliationSummary(deps, day, day);
      return {
        date: day,
        ledger_total_usd: usdNumber(summary?.ledgerTotalMicro ?? 0n),
        chain_total_usd: usdNumber(summary?.chainTotalMicro ?? 0n),
        matched: summary?.matched ?? 0,
        exception_counts: Object.fromEntries(
          RECONCILIATION_STATUSES.filter((s) => s !== 'matched').map((s) => [s, summary?.exceptions[s] ?? 0]),
        ),
        // The day's payments by outbox state now; pending is signed or sent.
        payment_counts: {
          pending: summary?.payments.pending ?? 0,
          confirmed: summary?.payments.confirmed ?? 0,
          finalized: summary?.payments.finalized ?? 0,
          failed: summary?.payments.failed ?? 0,
        },
        exceptions: rows.map((row) => ({
          movement_id: row.movementId,
          signature: row.signature,
          status: row.status,
          ledger_amount_usd: usdNumber(row.ledgerAmountMicro),
          chain_amount_usd: usdNumber(row.chainAmountMicro),
          commitment: row.commitment,
          detail: row.detail,
          checked_at: row.checkedAt,
        })),
      };
    },
  );
}

function toCsv(rows: readonly ReconciliationRow[]): string {
  const cell = (value: string) => (/[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
  const lines = rows.map((row) =>
    [
      row.day,
      row.movementId,
      row.signature,
      row.status,
      formatMicroUsd(row.ledgerAmountMicro),
      formatMicroUsd(row.chainAmountMicro),
      row.commitment,
      row.detail,
      row.checkedAt,
    ]
      .map(cell)
      .join(','),
  );
  return [CSV_COLUMNS.join(','), ...lines].join('\r\n') + '\r\n';
}
