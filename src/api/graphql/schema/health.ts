import type { DependencyHealth, HealthReport } from '../../../domain/health/health.service.js';
import { builder } from '../builder.js';

const DependencyHealthType = builder.objectRef<DependencyHealth>('DependencyHealth').implement({
  description: 'One backing service as the last probe saw it.',
  fields: (t) => ({
    name: t.exposeString('name'),
    status: t.exposeString('status', { description: '`up` or `down`.' }),
    latencyMs: t.exposeFloat('latencyMs', { description: 'Probe round-trip in milliseconds.' }),
    source: t.exposeString('source', {
      description: 'How the service was provided: external, embedded, shared or local.',
    }),
    error: t.exposeString('error', { nullable: true }),
  }),
});

const HealthReportType = builder.objectRef<HealthReport>('HealthReport').implement({
  fields: (t) => ({
    status: t.exposeString('status', { description: '`ok` when every dependency is up, else `down`.' }),
    checkedAt: t.expose('checkedAt', { type: 'DateTime' }),
    dependencies: t.expose('dependencies', { type: [DependencyHealthType] }),
  }),
});

builder.queryField('health', (t) =>
  t.field({
    type: HealthReportType,
    description: 'Status and latency of every backing service (the same report as GET /healthz).',
    resolve: (_root, _args, ctx) => ctx.deps.checkHealth(),
  }),
);
