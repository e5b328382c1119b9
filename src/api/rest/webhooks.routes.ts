import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import type { ApiDeps } from '../../app/api-deps.js';
import {
  createWebhook,
  deleteWebhook,
  enableWebhook,
  listWebhooks,
  replayWebhook,
  rotateWebhookSecret,
  webhookDeliveries,
  DELIVERY_PAGE_MAX,
} from '../../app/webhooks/manage-webhooks.js';
import { EVENT_TYPES } from '../../domain/events/event-types.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../../domain/webhooks/url-policy.js';
import {
  MAX_WEBHOOK_ENDPOINTS,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../../domain/webhooks/webhook-endpoint.js';
import { authErrors, errorBody } from './schemas.js';

const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const eventTypes = {
  type: 'array',
  items: { type: 'string', enum: [...EVENT_TYPES] },
} as const;

const createBody = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_WEBHOOK_URL_LENGTH,
      description:
        'Where events are POSTed: https (http only to a loopback address, outside production); its host must resolve to public addresses only',
    },
    events: {
      ...eventTypes,
      minItems: 1,
      maxItems: 50,
      description: 'The event types to receive; default every type',
    },
  },
  examples: [{ url: 'https://hooks.example.com/ledgerfeed', events: ['payment.finalized', 'send.received'] }],
} as const;

const endpointProperties = {
  id: { type: 'string' },
  url: { type: 'string' },
  events: eventTypes,
  status: { type: 'string', enum: ['enabled', 'disabled'] },
  created_at: { type: 'string', format: 'date-time' },
} as const;

const createdEndpoint = {
  type: 'object',
  required: ['id', 'url', 'events', 'secret', 'status', 'created_at'],
  properties: {
    ...endpointProperties,
    secret: {
      type: 'string',
      description: 'whsec_…: the signing secret, shown only here (and by rotate-secret). Store it now',
    },
  },
} as const;

const endpoint = {
  type: 'object',
  required: [
    'id',
    'url',
    'events',
    'status',
    'disabled_reason',
    'created_at',
    'delivered_through',
    'failing_since',
    'next_attempt_at',
  ],
  properties: {
    ...endpointProperties,
    disabled_reason: { type: ['string', 'null'], description: 'Why it was disabled; null while enabled' },
    delivered_through: {
      type: 'string',
      description: 'Event-log cursor: the sequence through which events have been delivered, as digits',
    },
    failing_since: {
      ...nullableTime,
      description: 'When the next event first failed; after WEBHOOK_RETRY_WINDOW_MS (3 days) it is disabled',
    },
    next_attempt_at: { ...nullableTime, description: 'When the failing event is tried again' },
  },
} as const;

const delivery = {
  type: 'object',
  required: [
    'event_id',
    'sequence',
    'attempt',
    'status_code',
    'error',
    'duration_ms',
    'delivered',
    'next_attempt_at',
    'created_at',
  ],
  properties: {
    event_id: { type: 'string' },
    sequence: { type: 'string', description: 'The event’s sequence in the account log, as digits' },
    attempt: { type: 'integer', description: '1 for the first try of this event' },
    status_code: {
      type: ['integer', 'null'],
      description: 'The receiver’s HTTP status; null without an answer',
    },
    error: {
      type: ['string', 'null'],
      description: 'Why it failed when no 2xx came (timeout, refused, ...)',
    },
    duration_ms: { type: 'integer' },
    delivered: { type: 'boolean' },
    next_attempt_at: { ...nullableTime, description: 'When it is tried again; null once delivered' },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'The endpoint (a UUID; anything else is 404)' } },
} as const;

const deliveriesQuery = {
  type: 'object',
  properties: {
    limit: { type: 'string', description: `Integer from 1 to ${DELIVERY_PAGE_MAX}; default 20` },
    cursor: { type: 'string', description: 'next_cursor of the previous page; omit for the newest' },
  },
} as const;

/** The body is optional (none, or JSON null: replay from the start). */
const replayBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    after: {
      anyOf: [
        { type: 'string', pattern: '^[0-9]{1,18}$' },
        { type: 'integer', minimum: 0 },
      ],
      description:
        'Event-log cursor (an event’s sequence): every event after it is delivered again, in order. Omitted: from the start of the kept log',
    },
  },
  examples: [{ after: '42' }],
} as const;

function endpointView(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    events: e.eventTypes,
    status: e.status,
    disabled_reason: e.disabledReason,
    created_at: e.createdAt.toISOString(),
    delivered_through: String(e.deliveredThrough),
    failing_since: e.failingSince?.toISOString() ?? null,
    next_attempt_at: e.nextAttemptAt?.toISOString() ?? null,
  };
}

function deliveryView(d: WebhookDelivery) {
  return {
    event_id: d.eventId,
    sequence: String(d.sequence),
    attempt: d.attempt,
    status_code: d.statusCode,
    error: d.error,
    duration_ms: d.durationMs,
    delivered: d.delivered,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
  };
}

/**
 * /webhooks: the account's endpoints. Every route authenticates with `read` and the service then
 * asks for a key holding every scope (as API keys and handle changes do): a webhook streams the
 * account's money out, so a delegated key must not redirect it. Changes spend the `webhooks`
 * bucket, reads `read`. The 6th endpoint is 409 `conflict`, as the 3rd API key is: a limit on what
 * the account holds, lifted by deleting one. A refused URL is 400 with the reason.
 */
export function registerWebhookRoutes(api: FastifyInstance, deps: ApiDeps): void {
  const tags = ['webhooks'];

  typedRoutes(api).post(
    '/webhooks',
    {
      config: { scope: 'read', bucket: 'webhooks' },
      schema: {
        operationId: 'createWebhook',
        summary: `Add a webhook endpoint (at most ${MAX_WEBHOOK_ENDPOINTS}; a key holding every scope)`,
        tags,
        body: createBody,
        response: { 201: createdEndpoint, 400: errorBody, 409: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      const { endpoint: created, secret } = await createWebhook(deps, request.viewer!, request.body);
      const { id, url, events, status, created_at } = endpointView(created);
      return reply.status(201).send({ id, url, events, secret, status, created_at });
    },
  );

  api.get(
    '/webhooks',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listWebhooks',
        summary: 'The account’s webhook endpoints, oldest first (never their secrets)',
        tags,
        response: {
          200: {
            type: 'object',
            required: ['webhooks'],
            properties: { webhooks: { type: 'array', items: endpoint } },
          },
          ...authErrors,
        },
      },
    },
    async (request) => ({ webhooks: (await listWebhooks(deps, request.viewer!)).map(endpointView) }),
  );

  typedRoutes(api).delete(
    '/webhooks/:id',
    {
      config: { scope: 'read', bucket: 'webhooks' },
      schema: {
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint and its delivery log',
        tags,
        params: idParams,
        response: { 204: { type: 'null' }, 404: errorBody, ...authErrors },
      },
    },
    async (request, reply) => {
      await deleteWebhook(deps, request.viewer!, request.params.id);
      return reply.status(204).send();
    },
  );

  typedRoutes(api).post(
    '/webhooks/:id/rotate-secret',
    {
      config: { scope: 'read', bucket: 'webhooks' },
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: 'A new signing secret; the old one keeps signing beside it for 24 h',
        tags,
        params: idParams,
        response: {
          200: {
            type: 'object',
            required: ['id', 'secret', 'previous_secret_expires_at'],
            properties: {
              id: { type: 'string' },
              secret: { type: 'string', description: 'whsec_…: the new secret, shown only here' },
              previous_secret_expires_at: {
                type: 'string',
                format: 'date-time',
                description: 'Until then deliveries carry a second v1= signature, made with the old secret',
              },
            },
          },
          404: errorBody,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const rotated = await rotateWebhookSecret(deps, request.viewer!, request.params.id);
      return {
        id: rotated.id,
        secret: rotated.secret,
        previous_secret_expires_at: rotated.previousSecretExpiresAt.toISOString(),
      };
    },
  );

  typedRoutes(api).post(
    '/webhooks/:id/enable',
    {
      config: { scope: 'read', bucket: 'webhooks' },
      schema: {
        operationId: 'enableWebhook',
        summary: 'Enable a disabled endpoint: its backlog follows, in order',
        tags,
        params: idParams,
        response: { 200: endpoint, 404: errorBody, ...authErrors },
      },
    },
    async (request) => endpointView(await enableWebhook(deps, request.viewer!, request.params.id)),
  );

  typedRoutes(api).get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: 'The endpoint’s delivery log: every attempt, newest first',
        tags,
        params: idParams,
        querystring: deliveriesQuery,
        response: {
          200: {
            type: 'object',
            required: ['deliveries', 'has_more', 'next_cursor'],
            properties: {
              deliveries: { type: 'array', items: delivery },
              has_more: { type: 'boolean' },
              next_cursor: {
                type: ['string', 'null'],
                description: 'The next (older) page’s cursor; null at the end',
              },
            },
          },
          400: errorBody,
          404: errorBody,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const page = await webhookDeliveries(deps, request.viewer!, request.params.id, request.query);
      return {
        deliveries: page.deliveries.map(deliveryView),
        has_more: page.hasMore,
        next_cursor: page.nextCursor,
      };
    },
  );

  typedRoutes(api).post(
    '/webhooks/:id/replay',
    {
      config: { scope: 'read', bucket: 'webhooks' },
      schema: {
        operationId: 'replayWebhook',
        summary:
          'Deliver again, in order, every event after a cursor (none: from the start of the log); at most 1,000 events, one replay in flight per endpoint',
        tags,
        params: idParams,
        body: replayBody,
        response: {
          202: {
            type: 'object',
            required: ['id', 'replay_from'],
            properties: {
              id: { type: 'string' },
              replay_from: {
                type: 'string',
                description:
                  'The cursor delivery restarts after: the next event delivered is the one after it',
              },
            },
          },
          // 400 also for a replay of more than 1,000 events (the message names how many); 409 while
          // the endpoint's previous replay is still being sent.
          400: errorBody,
          404: errorBody,
          409: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const replay = await replayWebhook(deps, request.viewer!, request.params.id, request.body?.after);
      return reply.status(202).send({ id: replay.id, replay_from: String(replay.replayFrom) });
    },
  );
}
