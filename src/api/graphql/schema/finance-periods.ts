import { closePeriod, getPeriod, listPeriods, reopenPeriod } from '../../../app/reports/finance-periods.js';
import type { FinancePeriod } from '../../../domain/reports/finance-period.js';
import { builder } from '../builder.js';

/*
 * Finance periods (REST /finance/periods; docs/reports.md "Closing a period"): the same service
 * functions. closePeriod answers the period (status CLOSING while its runs are made); its refusals
 * carry the same codes as REST (CLOSE_BLOCKED with `extensions.blockers`, PERIOD_NOT_ENDED).
 */

const FinancePeriodStatusEnum = builder.enumType('FinancePeriodStatus', {
  values: {
    OPEN: { value: 'open', description: 'Never closed, or reopened.' },
    CLOSING: { value: 'closing', description: 'Its three runs are being made.' },
    CLOSED: { value: 'closed', description: 'Its runs succeeded and are frozen.' },
  } as const,
});

type PeriodReport = FinancePeriod['reports'][number];

const PeriodReportRef = builder.objectRef<PeriodReport>('FinancePeriodReport').implement({
  description: 'One of a period’s frozen runs (REST GET /reports/{id}).',
  fields: (t) => ({
    type: t.exposeString('type'),
    id: t.exposeID('id'),
    sha256: t.exposeString('sha256', { nullable: true }),
    rowCount: t.string({
      nullable: true,
      description: 'Data rows as a string of digits; null until the run succeeded.',
      resolve: (r) => (r.rowCount === null ? null : String(r.rowCount)),
    }),
  }),
});

const FinancePeriodRef = builder.objectRef<FinancePeriod>('FinancePeriod').implement({
  description: 'A month (YYYY-MM) or a day (YYYY-MM-DD) in a timezone, and whether finance closed it.',
  fields: (t) => ({
    period: t.exposeString('period'),
    timezone: t.exposeString('timezone'),
    periodStart: t.expose('periodStart', { type: 'DateTime' }),
    periodEnd: t.expose('periodEnd', { type: 'DateTime' }),
    status: t.expose('status', { type: FinancePeriodStatusEnum }),
    closedAt: t.expose('closedAt', { type: 'DateTime', nullable: true }),
    reopenedAt: t.expose('reopenedAt', { type: 'DateTime', nullable: true }),
    reports: t.field({ type: [PeriodReportRef], resolve: (p) => p.reports }),
  }),
});

builder.queryFields((t) => ({
  financePeriod: t.field({
    type: FinancePeriodRef,
    description:
      'A period’s state and its frozen runs (REST GET /finance/periods/{period}); finance or admin.',
    authScopes: { read: true },
    args: { period: t.arg.string({ required: true }) },
    resolve: (_root, { period }, ctx) => getPeriod(ctx.deps, ctx.viewer!, period),
  }),
  financePeriods: t.field({
    type: [FinancePeriodRef],
    description: 'Every period closed, closing or reopened, newest first (REST GET /finance/periods).',
    authScopes: { read: true },
    resolve: (_root, _args, ctx) => listPeriods(ctx.deps, ctx.viewer!),
  }),
}));

builder.mutationFields((t) => ({
  closePeriod: t.field({
    type: FinancePeriodRef,
    description:
      'Close a period (REST POST /finance/periods/{period}/close; finance or admin): CLOSING while its balance.summary, ledger.itemized and reconciliation.itemized runs are made, then CLOSED.',
    authScopes: { read: true },
    rateLimit: 'reports',
    args: { period: t.arg.string({ required: true }), timezone: t.arg.string() },
    resolve: async (_root, { period, timezone }, ctx) =>
      (await closePeriod(ctx.deps, ctx.viewer!, period, timezone != null ? { timezone } : {})).period,
  }),
  reopenPeriod: t.field({
    type: FinancePeriodRef,
    description: 'Reopen a closing or closed period (REST POST /finance/periods/{period}/reopen; admin).',
    authScopes: { read: true },
    rateLimit: 'reports',
    args: { period: t.arg.string({ required: true }) },
    resolve: (_root, { period }, ctx) => reopenPeriod(ctx.deps, ctx.viewer!, period),
  }),
}));
