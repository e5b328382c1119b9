import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { getPost } from '../../app/feed/post-reads.js';
import { userTimeline } from '../../app/feed/user-timeline.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { baseUrlOf } from '../base-url.js';
import { FEED_ADMISSION, type FeedPages } from './feed-pages.js';
import { feedItem, pageQuery, postPage, singlePost, timelineItem } from './post-schemas.js';
import { singlePostView, timelineItemView } from './post-views.js';
import { authErrors, errorBody, handleParams, postIdParams } from './schemas.js';

/**
 * The read path (issue #7): the global feed, one post with its thread context, and a profile's
 * timeline. All need `read` and spend the `read` bucket. Posts whose payment failed on chain are
 * shown nowhere. deps is read only inside handlers: the OpenAPI printer registers routes with
 * deps that refuse use. Feed pages are kept as JSON bytes (feed-pages.ts); the kept ones are also
 * answered before this route (src/api/cached-reads/).
 */
export function registerFeedRoutes(api: FastifyInstance, deps: ApiDeps, feedPages: FeedPages): void {
  typedRoutes(api).get(
    '/feed',
    {
      config: FEED_ADMISSION,
      schema: {
        operationId: 'getFeed',
        summary: 'Global feed (trending or latest)',
        description:
          'latest: every post newest first, keyset-paged on (created_at, id). trending: the ranked snapshot; a cursor whose snapshot is gone answers 410 cursor_expired (start again without a cursor).',
        tags: ['feed'],
        querystring: {
          type: 'object',
          properties: {
            sort: { type: 'string', enum: ['trending', 'latest'], description: 'Default trending' },
            ...pageQuery,
          },
        },
        response: { 200: postPage(feedItem), 400: errorBody, 410: errorBody, 503: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      const page = feedPages.page(baseUrlOf(request), request.query);
      const body = await feedPages.get(page, request.viewer?.accountId);
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );

  typedRoutes(api).get(
    '/posts/:id',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getPost',
        summary: 'One post with its thread context (parent, quoted_post)',
        tags: ['feed'],
        params: postIdParams,
        response: { 200: singlePost, 404: errorBody, ...authErrors },
      },
    },
    async (request) => singlePostView(await getPost(deps.reads, request.params.id), baseUrlOf(request)),
  );

  typedRoutes(api).get(
    '/users/:handle/posts',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getUserPosts',
        summary: 'A profile’s timeline: its posts and reposts, newest first',
        description:
          'Posts, replies and quotes by the user, and the posts they reposted, merged newest first (a repost at the time it was reposted); keyset-paged on (time, id). A post is a feed item; a repost is the reposted post’s feed item plus reposted_by (the reposter’s handle) and reposted_at.',
        tags: ['feed'],
        params: handleParams,
        querystring: { type: 'object', properties: pageQuery },
        response: { 200: postPage(timelineItem), 400: errorBody, 404: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const page = await userTimeline(deps.reads, request.params.handle, request.query);
      const baseUrl = baseUrlOf(request);
      return {
        posts: page.items.map((item) => timelineItemView(item, baseUrl)),
        has_more: page.hasMore,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      };
    },
  );
}
