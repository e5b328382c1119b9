import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { createPost } from '../../app/write-path/create-post.js';
import type { ApiDeps } from '../../app/api-deps.js';
import {
  authErrors,
  errorBody,
  idempotencyKeyHeaders,
  insufficientBalanceBody,
  pendingStatus,
} from './schemas.js';

const postBody = {
  type: 'object',
  required: ['content', 'type'],
  additionalProperties: false,
  properties: {
    content: {
      type: 'string',
      description:
        'Non-empty after trimming; at most 1,000 characters. Tab, line feed and CRLF are allowed; no other control characters (U+0000-U+001F, U+007F-U+009F) and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)',
    },
    type: { type: 'string', enum: ['post', 'reply', 'quote'] },
    parent_id: { type: 'string', format: 'uuid', description: 'The post replied to (reply only)' },
    quoted_post_id: { type: 'string', format: 'uuid', description: 'The post quoted (quote only)' },
  },
  examples: [
    { content: 'First post: every line here cost a dollar.', type: 'post' },
    {
      content: 'Agreed, worth the dollar.',
      type: 'reply',
      parent_id: '0f8c2a4e-6b1d-4c3a-9e57-2d8b1f6a7c90',
    },
    { content: 'Read this one.', type: 'quote', quoted_post_id: '0f8c2a4e-6b1d-4c3a-9e57-2d8b1f6a7c90' },
  ],
} as const;

const createdPost = {
  type: 'object',
  required: ['id', 'content', 'type', 'author', 'cost_usd_micro', 'swap_tx', 'created_at'],
  properties: {
    id: { type: 'string' },
    content: { type: 'string' },
    type: { type: 'string' },
    author: {
      type: 'object',
      required: ['handle', 'wallet_address'],
      properties: { handle: { type: 'string' }, wallet_address: { type: 'string' } },
    },
    cost_usd_micro: { type: 'integer' },
    swap_tx: { type: 'string', description: 'Signature of the USDC payment' },
    created_at: { type: 'string', format: 'date-time' },
    status: pendingStatus,
  },
} as const;

/**
 * POST /posts: a paid post, reply or quote ($1). The money move is committed with its signed
 * transaction (outbox) before anything is sent; the payments worker sends and confirms. The
 * request answers 201 once the cluster has executed the payment (the worker follows it on to
 * confirmed), or 202 with the known swap_tx if that takes longer than WRITE_TIMEOUT_MS.
 */
export function registerPostRoutes(api: FastifyInstance, deps: ApiDeps): void {
  // The body's type is derived from postBody (json-schema-to-ts): no hand-written twin to drift.
  typedRoutes(api).post(
    '/posts',
    {
      config: { scope: 'post', bucket: 'post', idempotent: true },
      schema: {
        operationId: 'createPost',
        summary: 'Create a post, reply or quote ($1 USDC)',
        tags: ['posts'],
        headers: idempotencyKeyHeaders,
        body: postBody,
        response: {
          201: createdPost,
          202: createdPost,
          400: errorBody,
          402: insufficientBalanceBody,
          404: errorBody,
          422: errorBody,
          503: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const viewer = request.viewer!;
      const { body } = request;
      const post = await createPost(
        deps,
        viewer.accountId,
        {
          content: body.content,
          type: body.type,
          parentId: body.parent_id,
          quotedPostId: body.quoted_post_id,
        },
        request.idempotency,
      );
      return reply.status(post.settled === 'pending' ? 202 : 201).send({
        id: post.id,
        content: post.content,
        type: post.type,
        // A poster paid from their wallet, so it exists; the serializer wrote '' for null anyway.
        author: { handle: viewer.handle, wallet_address: viewer.walletAddress ?? '' },
        cost_usd_micro: Number(post.costMicro),
        swap_tx: post.landedSwapTx,
        created_at: post.createdAt.toISOString(),
        ...(post.settled === 'pending' ? { status: 'pending' } : {}),
      });
    },
  );
}
