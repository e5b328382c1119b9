import { Readable } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import {
  parseDay,
  reconciliationExceptions,
  reconciliationSummary,
  reconciliationVerdicts,
  type ReconciliationRow,
} from '../../app/analytics/analytics-reads.js';
import { formatMicroUsd } from '../../domain/money/usd.js';
import { csvRecord } from '../../domain/reports/report-format.js';
import { RECONCILIATION_STATUSES } from '../../domain/reconciliation/reconciliation.js';
import { usdNumber } from '../http-views.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { requireFinance } from '../../domain/auth/access-rules.js';
import { EXCEPTION_FIELDS, reconciliationAnswer } from './finance-schemas.js';
import { authErrors, errorBody } from './schemas.js';

/**
 * The JSON report lists at most this many exceptions (it is built whole); past it, `has_more` says
 * so. The CSV has no bound: it streams every verdict of the day.
 */
const REPORT_MAX_EXCEPTIONS = 100_000;

/** Verdicts per chunk written to the response (one string of ~200 kB). */
const CSV_ROWS_PER_CHUNK = 1_000;

const CSV_COLUMNS = ['ledger_day', ...EXCEPTION_FIELDS] as const;

/**
 * GET /finance/reconciliation?date=YYYY-MM-DD (finance or admin role, scope read): the day's
 * ledger vs chain totals, verdict counts, payments by outbox state and exceptions as JSON (the
 * exceptions include the day's payments not finalized 5 minutes after signing, `not_finalized`,
 * read from the outbox now); with `Accept: text/csv`, every verdict the reconciler recorded for the
 * day as CSV (one row per ledger movement), the proof finance files, streamed from ClickHouse as
 * the client reads it (see csvResponse).
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
      if (/\btext\/csv\b/.test(request.headers.accept ?? '')) {
        const body = await csvResponse(deps, day, request.log);
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="reconciliation-${day}.csv"`)
          .send(body);
      }
      const { rows, hasMore } = await reconciliationExceptions(deps, { day, first: REPORT_MAX_EXCEPTIONS });
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
        has_more: hasMore,
        ...(hasMore
          ? {
              message:
                `The day has more than ${REPORT_MAX_EXCEPTIONS} exceptions; only the first ${REPORT_MAX_EXCEPTIONS} are listed. ` +
                'Every verdict of the day is in the CSV (Accept: text/csv); GraphQL reconciliationExceptions(day:) pages through all exceptions.',
            }
          : {}),
      };
    },
  );
}

/**
 * The day's CSV as a byte stream: the header, then every verdict, read from ClickHouse only as fast
 * as the client takes the response (the Readable pulls the next chunk when the socket drains, and
 * the ClickHouse read waits for that pull). The query runs and its first rows arrive before the
 * answer starts, so a refusal or a failing query is still an error answer (503, 500). A failure
 * after that cannot change the status any more: the stream errors, Fastify destroys the socket, so
 * the chunked body never ends cleanly and no client takes a cut file for a whole one, and the log
 * says why and after how many rows.
 */
async function csvResponse(deps: ApiDeps, day: string, log: FastifyBaseLogger): Promise<Readable> {
  const verdicts = reconciliationVerdicts(deps, day)[Symbol.asyncIterator]();
  const first = await verdicts.next();
  async function* chunks(): AsyncGenerator<string> {
    let rows = 0;
    try {
      let records = [csvRecord(CSV_COLUMNS)];
      for (let next = first; !next.done; next = await verdicts.next()) {
        records.push(csvRecord(verdictCells(next.value)));
        rows += 1;
        if (records.length >= CSV_ROWS_PER_CHUNK) {
          yield records.join('');
          records = [];
        }
      }
      if (records.length > 0) yield records.join('');
    } catch (error) {
      log.error(
        { err: error, day, rows },
        `reconciliation CSV of ${day} failed after ${rows} rows: the response is cut`,
      );
      throw error;
    }
  }
  const body = Readable.from(chunks(), { objectMode: false });
  // A client gone before the stream started never runs chunks(): end the ClickHouse read here.
  body.once('close', () => void verdicts.return?.());
  return body;
}

/** One verdict's cells in CSV_COLUMNS order (csvRecord quotes them as RFC 4180 says). */
function verdictCells(row: ReconciliationRow): string[] {
  return [
    row.day,
    row.movementId,
    row.signature,
    row.status,
    formatMicroUsd(row.ledgerAmountMicro),
    formatMicroUsd(row.chainAmountMicro),
    row.commitment,
    row.detail,
    row.checkedAt,
  ];
}
