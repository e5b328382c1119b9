import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import {
  DEFAULT_POST_EARNINGS_PAGE,
  MAX_POST_EARNINGS_PAGE,
  MAX_POST_EARNINGS_RANGE_DAYS,
  postEarningsWithPosts,
  type PostEarningsOrder,
  type PostEarningsWithPost,
} from '../../app/analytics/post-earnings.js';
import { parsePageLimit } from '../../domain/pagination/page-limit.js';
import { parseInstant } from '../../domain/reports/report-request.js';
import { baseUrlOf } from '../base-url.js';
import { usdNumber } from '../http-views.js';
import { feedItem } from './post-schemas.js';
import { feedItemView } from './post-views.js';
import { authErrors, errorBody } from './schemas.js';
import { rangeBounds } from './range-query.js';
import { typedRoutes } from './typed-routes.js';

const earningsQuery = {
  type: 'object',
  required: ['from', 'to'],
  properties: {
    ...rangeBounds({ to: `at most ${MAX_POST_EARNINGS_RANGE_DAYS} days after from`, readIn: 'UTC' }),
    order_by: {
      type: 'string',
      enum: ['earned', 'engagement', 'newest'],
      description:
        'Default earned. earned / engagement (likes + replies + quotes + reposts): highest first, posts with none in the range last; every order ends newest first, then by post id',
    },
    limit: {
      type: 'string',
      description: `Integer from 1 to ${MAX_POST_EARNINGS_PAGE}; default ${DEFAULT_POST_EARNINGS_PAGE}`,
    },
    cursor: { type: 'string', description: 'next_cursor of the previous page (same from, to and order_by)' },
  },
} as const;

const postEarnings = {
  type: 'object',
  required: ['post_id', 'post', 'created_at', 'earned_usd', 'likes', 'replies', 'quotes', 'reposts'],
  properties: {
    post_id: { type: 'string' },
    post: {
      ...feedItem,
      type: ['object', 'null'],
      description: 'The post as feed items show it; null when its payment failed on chain',
    },
    created_at: { type: 'string', format: 'date-time' },
    earned_usd: {
      type: 'number',
      description:
        'Dollars: the creator’s USDC share of the replies, quotes and reposts paid on the post in the range, net of reversals',
    },
    likes: { type: 'integer', description: 'Likes minus unlikes in the range' },
    replies: { type: 'integer' },
    quotes: { type: 'integer' },
    reposts: { type: 'integer' },
  },
} as const;

const earningsPage = {
  type: 'object',
  required: ['posts', 'has_more'],
  properties: {
    posts: { type: 'array', items: postEarnings },
    has_more: { type: 'boolean' },
    next_cursor: { type: 'string', description: 'Present only when has_more' },
  },
} as const;

function postEarningsView(row: PostEarningsWithPost, baseUrl: string) {
  return {
    post_id: row.postId,
    post: row.post ? feedItemView(row.post, baseUrl) : null,
    created_at: row.createdAt.toISOString(),
    earned_usd: usdNumber(row.earnedMicro),
    likes: row.likes,
    replies: row.replies,
    quotes: row.quotes,
    reposts: row.reposts,
  };
}

/**
 * GET /me/posts/earnings: every post of the caller's with its earnings and engagement over
 * [from, to), the twin of GraphQL `postEarnings` for the caller's own handle. Scope `read`, bucket
 * `read`. deps is read only inside the handler (the OpenAPI printer registers with deps that
 * refuse use).
 */
export function registerPostEarningsRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).get(
    '/me/posts/earnings',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listPostEarnings',
        summary: 'Every own post with its earnings and engagement over a range',
        tags: ['posts'],
        querystring: earningsQuery,
        response: { 200: earningsPage, 400: errorBody, 503: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const query = request.query;
      const page = await postEarningsWithPosts(deps, request.viewer!, {
        from: parseInstant('from', query.from, 'UTC'),
        to: parseInstant('to', query.to, 'UTC'),
        order: (query.order_by ?? 'earned') satisfies PostEarningsOrder,
        first: parsePageLimit(query.limit, {
          max: MAX_POST_EARNINGS_PAGE,
          fallback: DEFAULT_POST_EARNINGS_PAGE,
        }),
        after: query.cursor,
      });
      const baseUrl = baseUrlOf(request);
      return {
        posts: page.rows.map((row) => postEarningsView(row, baseUrl)),
        has_more: page.hasMore,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      };
    },
  );
}
