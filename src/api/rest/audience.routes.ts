import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import { audienceFor, MAX_AUDIENCE_RANGE_DAYS, TOP_SUPPORTERS } from '../../app/analytics/audience.js';
import { parseInstant } from '../../domain/reports/report-request.js';
import { usdNumber } from '../http-views.js';
import { authErrors, errorBody } from './schemas.js';
import { rangeBounds } from './range-query.js';
import { typedRoutes } from './typed-routes.js';

const audienceQuery = {
  type: 'object',
  required: ['from', 'to'],
  properties: {
    ...rangeBounds({ to: `at most ${MAX_AUDIENCE_RANGE_DAYS} days after from`, readIn: 'UTC' }),
  },
} as const;

const audience = {
  type: 'object',
  required: ['unique_engagers', 'paying_engagers', 'new_followers', 'top_supporters'],
  properties: {
    unique_engagers: {
      type: 'integer',
      description:
        'Distinct accounts that liked, replied to, quoted or reposted own posts in the range (own engagement not counted)',
    },
    paying_engagers: {
      type: 'integer',
      description:
        'Distinct accounts whose replies, quotes or reposts on own posts paid the caller in the range, net of reversed payments',
    },
    new_followers: {
      type: 'integer',
      description: 'Accounts following the caller now whose follow began in the range',
    },
    top_supporters: {
      type: 'array',
      description: `The ${TOP_SUPPORTERS} accounts that paid the most into the caller's earnings in the range; most first, ties by handle`,
      items: {
        type: 'object',
        required: ['handle', 'paid_usd'],
        properties: {
          handle: { type: 'string' },
          paid_usd: {
            type: 'number',
            description:
              'Dollars: the caller’s USDC share of the replies, quotes and reposts this account paid on own posts in the range, net of reversals',
          },
        },
      },
    },
  },
} as const;

/**
 * GET /me/audience: who engaged with, paid and followed the caller in [from, to), the twin of
 * GraphQL `audience` for the caller's own handle. Scope `read`, bucket `read`. deps is read only
 * inside the handler (the OpenAPI printer registers with deps that refuse use).
 */
export function registerAudienceRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).get(
    '/me/audience',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getAudience',
        summary: 'Who engaged with, paid and followed the caller over a range',
        tags: ['posts'],
        querystring: audienceQuery,
        response: { 200: audience, 400: errorBody, 503: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const viewer = request.viewer!;
      const answer = await audienceFor(deps, viewer, {
        handle: viewer.handle,
        from: parseInstant('from', request.query.from, 'UTC'),
        to: parseInstant('to', request.query.to, 'UTC'),
      });
      return {
        unique_engagers: answer.uniqueEngagers,
        paying_engagers: answer.payingEngagers,
        new_followers: answer.newFollowers,
        top_supporters: answer.topSupporters.map((s) => ({
          handle: s.handle,
          paid_usd: usdNumber(s.paidMicro),
        })),
      };
    },
  );
}
