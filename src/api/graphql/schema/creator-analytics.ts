import type { EarningsPoint } from '../../../app/analytics/analytics-reads.js';
import { earningsFor } from '../../../app/analytics/guarded-analytics.js';
import { builder } from '../builder.js';

/*
 * What a creator reads about their own money and audience (issue 51): earnings over any period,
 * every post's earnings, the audience. Each answers for the viewer's own handle; finance and admin
 * may read any. Served from ClickHouse (schema/clickhouse/0005_creator_analytics.sql).
 */

const EarningsGranularity = builder.enumType('EarningsGranularity', {
  values: { HOUR: { value: 'hour' }, DAY: { value: 'day' } } as const,
});

const EarningsBucket = builder.objectRef<EarningsPoint>('EarningsBucket').implement({
  fields: (t) => ({
    bucket: t.exposeString('bucket', { description: 'Start of the hour or day, UTC.' }),
    amountUsdMicro: t.field({ type: 'MicroUsd', resolve: (p) => p.amountMicro }),
  }),
});

builder.queryFields((t) => ({
  creatorEarnings: t.field({
    type: [EarningsBucket],
    description:
      'Earnings (engagement shares, later fund payouts) per hour or day in [from, to). Own handle; finance/admin any.',
    authScopes: { read: true },
    args: {
      handle: t.arg.string({ required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      granularity: t.arg({ type: EarningsGranularity, required: true }),
    },
    resolve: (_root, args, ctx) =>
      earningsFor(ctx.deps, ctx.viewer!, {
        handle: args.handle,
        from: new Date(args.from),
        to: new Date(args.to),
        granularity: args.granularity,
      }),
  }),
}));
