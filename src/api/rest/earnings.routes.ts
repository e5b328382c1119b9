import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import { creatorEarningsFor } from '../../app/analytics/creator-earnings.js';
import {
  EARNINGS_GRANULARITIES,
  EARNINGS_GROUP_BYS,
  EARNINGS_RANGE_LIMITS,
  EARNINGS_SOURCES,
  type EarningsBucket,
} from '../../domain/analytics/earnings-period.js';
import { parseInstant, parseTimezone } from '../../domain/reports/report-request.js';
import { usdNumber } from '../http-views.js';
import { authErrors, errorBody } from './schemas.js';
import { rangeBounds } from './range-query.js';
import { typedRoutes } from './typed-routes.js';

const limits = EARNINGS_RANGE_LIMITS;

const earningsQuery = {
  type: 'object',
  required: ['from', 'to'],
  properties: {
    ...rangeBounds({
      to: `at most ${limits.hour.label} after from at hour, ${limits.day.label} at day, ${limits.week.label} at week and month`,
      readIn: 'timezone',
    }),
    granularity: {
      type: 'string',
      enum: EARNINGS_GRANULARITIES,
      description: 'Default day. Buckets start at the local hour, midnight, Monday or 1st in timezone',
    },
    timezone: { type: 'string', description: 'An IANA time zone name; default UTC' },
    group_by: {
      type: 'string',
      enum: EARNINGS_GROUP_BYS,
      description:
        'Default none: one total per bucket; source: per paid engagement (reply, quote, repost); post: per own post engaged with',
    },
  },
} as const;

const earningsBuckets = {
  type: 'object',
  required: ['buckets'],
  properties: {
    buckets: {
      type: 'array',
      description: 'Oldest first; buckets without earnings are absent',
      items: {
        type: 'object',
        required: ['bucket', 'amount_usd'],
        properties: {
          bucket: {
            type: 'string',
            format: 'date-time',
            description: 'The local start of the bucket as a UTC instant',
          },
          amount_usd: {
            type: 'number',
            description:
              'Dollars: the USDC share of paid replies, quotes and reposts on own posts in the bucket, net of reversals. Creator-fund payouts (native tokens) and received sends are not included',
          },
          source: {
            type: ['string', 'null'],
            enum: [...EARNINGS_SOURCES, null],
            description:
              'Present when group_by=source (null only for earnings shipped before sources were recorded, until `cli reindex`)',
          },
          post_id: { type: 'string', format: 'uuid', description: 'Present when group_by=post' },
        },
      },
    },
  },
} as const;

function bucketView(row: EarningsBucket, groupBy: string) {
  return {
    bucket: row.bucket,
    amount_usd: usdNumber(row.amountMicro),
    ...(groupBy === 'source' ? { source: row.source } : {}),
    ...(groupBy === 'post' && row.postId ? { post_id: row.postId } : {}),
  };
}

/**
 * GET /me/earnings: the caller's USDC earnings over [from, to) per local hour, day, week or month,
 * optionally by source or post; the twin of GraphQL `creatorEarnings` for the caller's own handle.
 * Scope `read`, bucket `read`. deps is read only inside the handler (the OpenAPI printer registers
 * with deps that refuse use).
 */
export function registerEarningsRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).get(
    '/me/earnings',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listEarnings',
        summary: 'Own USDC earnings per hour, day, week or month, optionally by source or post',
        tags: ['money'],
        querystring: earningsQuery,
        response: { 200: earningsBuckets, 400: errorBody, 503: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const query = request.query;
      const timezone = parseTimezone(query.timezone);
      const groupBy = query.group_by ?? 'none';
      const buckets = await creatorEarningsFor(deps, request.viewer!, {
        from: parseInstant('from', query.from, timezone),
        to: parseInstant('to', query.to, timezone),
        granularity: query.granularity ?? 'day',
        timezone,
        groupBy,
      });
      return { buckets: buckets.map((row) => bucketView(row, groupBy)) };
    },
  );
}
