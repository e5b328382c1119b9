import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import { closePeriod, getPeriod, listPeriods, reopenPeriod } from '../../app/reports/finance-periods.js';
import type { FinancePeriod } from '../../domain/reports/finance-period.js';
import { REPORT_TYPES } from '../../domain/reports/report-kinds.js';
import { authErrors, closeBlockedBody, errorBody } from './schemas.js';
import { typedRoutes } from './typed-routes.js';

const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const periodBody = {
  type: 'object',
  required: ['period', 'timezone', 'period_start', 'period_end', 'status', 'closed_at', 'reports'],
  properties: {
    period: { type: 'string', description: 'YYYY-MM or YYYY-MM-DD' },
    timezone: { type: 'string', description: 'Where the period starts and ends (IANA name)' },
    period_start: { type: 'string', format: 'date-time' },
    period_end: { type: 'string', format: 'date-time' },
    status: { type: 'string', enum: ['open', 'closing', 'closed'] },
    closed_at: nullableTime,
    reopened_at: nullableTime,
    reports: {
      type: 'array',
      description: 'The frozen runs (balance.summary, ledger.itemized, reconciliation.itemized)',
      items: {
        type: 'object',
        required: ['type', 'id', 'sha256', 'row_count'],
        properties: {
          type: { type: 'string', enum: [...REPORT_TYPES] },
          id: { type: 'string' },
          sha256: { type: ['string', 'null'] },
          row_count: { type: ['integer', 'null'] },
        },
      },
    },
  },
} as const;

const closingBody = {
  type: 'object',
  required: ['period', 'status'],
  properties: { period: { type: 'string' }, status: { type: 'string', enum: ['closing'] } },
} as const;

const periodParams = {
  type: 'object',
  required: ['period'],
  properties: { period: { type: 'string', description: 'YYYY-MM or YYYY-MM-DD' } },
} as const;

export function periodView(p: FinancePeriod) {
  return {
    period: p.period,
    timezone: p.timezone,
    period_start: p.periodStart.toISOString(),
    period_end: p.periodEnd.toISOString(),
    status: p.status,
    closed_at: p.closedAt?.toISOString() ?? null,
    reopened_at: p.reopenedAt?.toISOString() ?? null,
    reports: p.reports.map((r) => ({ type: r.type, id: r.id, sha256: r.sha256, row_count: r.rowCount })),
  };
}

/** /finance/periods: closing a period (docs/reports.md "Closing a period"). */
export function registerFinancePeriodRoutes(api: FastifyInstance, deps: ApiDeps): void {
  const tags = ['finance'];

  typedRoutes(api).post(
    '/finance/periods/:period/close',
    {
      config: { scope: 'read', bucket: 'reports' },
      schema: {
        operationId: 'closeFinancePeriod',
        summary:
          'Close a period (finance): 202 closing while its three runs are made; 200 with the period once closed',
        tags,
        params: periodParams,
        body: {
          type: ['object', 'null'],
          properties: {
            timezone: {
              type: 'string',
              description: 'Where the period starts and ends: an IANA name; default UTC',
            },
          },
          examples: [{ timezone: 'Europe/Paris' }],
        },
        response: {
          200: periodBody,
          202: closingBody,
          400: errorBody,
          409: closeBlockedBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const { period, accepted } = await closePeriod(
        deps,
        request.viewer!,
        request.params.period,
        request.body ?? undefined,
      );
      if (period.status === 'closed' && !accepted) return reply.status(200).send(periodView(period));
      return reply.status(202).send({ period: period.period, status: 'closing' as const });
    },
  );

  typedRoutes(api).post(
    '/finance/periods/:period/reopen',
    {
      config: { scope: 'read', bucket: 'reports' },
      schema: {
        operationId: 'reopenFinancePeriod',
        summary: 'Reopen a closing or closed period (admin); writes period.reopened',
        tags,
        params: periodParams,
        response: { 200: periodBody, 400: errorBody, 409: errorBody, ...authErrors },
      },
    },
    async (request) => periodView(await reopenPeriod(deps, request.viewer!, request.params.period)),
  );

  typedRoutes(api).get(
    '/finance/periods/:period',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getFinancePeriod',
        summary: 'A period’s state (open, closing, closed) and its frozen runs',
        tags,
        params: periodParams,
        response: { 200: periodBody, 400: errorBody, ...authErrors },
      },
    },
    async (request) => periodView(await getPeriod(deps, request.viewer!, request.params.period)),
  );

  typedRoutes(api).get(
    '/finance/periods',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listFinancePeriods',
        summary: 'Every period closed, closing or reopened, newest first',
        tags,
        response: {
          200: {
            type: 'object',
            required: ['periods'],
            properties: { periods: { type: 'array', items: periodBody } },
          },
          ...authErrors,
        },
      },
    },
    async (request) => ({ periods: (await listPeriods(deps, request.viewer!)).map(periodView) }),
  );
}
