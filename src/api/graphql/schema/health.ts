import {
  publicHealthReport,
  type DependencyHealth,
  type HealthReport,
} from '../../../domain/health/health.service.js';
import { readsAsFinance } from '../../../domain/auth/access-rules.js';
import { builder } from '../builder.js';

const DependencyHealthType = builder.objectRef<DependencyHealth>('DependencyHealth').implement({
  description: 'One backing service as the last probe saw it.',
  fields: (t) => ({
    name: t.exposeString('name'),
    status: t.exposeString('status', {
      description:
        '`up`, `down`, or `not_configured` (a process that runs without it on purpose: an api without ClickHouse).',
    }),
    latencyMs: t.exposeFloat('latencyMs', { description: 'Probe round-trip in milliseconds.' }),
    source: t.exposeString('source', {
      description: 'How the service was provided: external, embedded, shared or local.',
    }),
    error: t.string({
      nullable: true,
      description:
        'Why it is down: the probe error itself for the admin and finance roles (with a `read` key), a summary (a timeout, or that the probe failed) for everyone else.',
      resolve: (dependency) => dependency.detail ?? dependency.error ?? null,
    }),
  }),
});

const HealthReportType = builder.objectRef<HealthReport>('HealthReport').implement({
  fields: (t) => ({
    status: t.exposeString('status', {
      description: '`ok` when every dependency is up, else `down`; `draining` once the process is stopping.',
    }),
    checkedAt: t.expose('checkedAt', { type: 'DateTime' }),
    dependencies: t.expose('dependencies', { type: [DependencyHealthType] }),
  }),
});

builder.queryField('health', (t) =>
  t.field({
    type: HealthReportType,
    description:
      'Status and latency of every backing service (the same report as GET /healthz, probed at most once every 2 seconds).',
    // Every selection shares one cached report (app/health-check.ts), so aliases cannot multiply
    // probes.
    // Probe errors name internal hosts: only operators see them, and only through a `read` key.
    resolve: async (_root, _args, ctx) => {
      const report = await ctx.deps.checkHealth();
      const operator = readsAsFinance(ctx.viewer);
      return operator ? report : publicHealthReport(report);
    },
  }),
);
