import {
  createWebhook,
  deleteWebhook,
  DELIVERY_PAGE_MAX,
  enableWebhook,
  listWebhooks,
  replayWebhook,
  rotateWebhookSecret,
  webhookDeliveries,
  type DeliveryPage,
} from '../../../app/webhooks/manage-webhooks.js';
import {
  MAX_WEBHOOK_ENDPOINTS,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../../../domain/webhooks/webhook-endpoint.js';
import { builder } from '../builder.js';

/*
 * Webhook endpoints (REST /webhooks). Every field authenticates with `read` and the service asks
 * for a key holding every scope (as createApiKey does): an endpoint streams the account's money
 * out, so a delegated key must not redirect it. Mutations spend the `webhooks` bucket, as their
 * REST twins do.
 */

const WebhookStatusEnum = builder.enumType('WebhookStatus', {
  values: {
    ENABLED: { value: 'enabled', description: 'Events are delivered.' },
    DISABLED: {
      value: 'disabled',
      description:
        'An event kept failing for the whole retry window (3 days): nothing is sent until enableWebhook, and then the backlog follows in order.',
    },
  } as const,
});

const WebhookEndpointRef = builder.objectRef<WebhookEndpoint>('WebhookEndpoint').implement({
  description: 'A webhook endpoint as its owner sees it: never its secret, shown once at creation.',
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url'),
    events: t.stringList({
      description: 'The event types it receives (the `type` of AccountEvent).',
      resolve: (endpoint) => endpoint.eventTypes,
    }),
    status: t.expose('status', { type: WebhookStatusEnum }),
    disabledReason: t.exposeString('disabledReason', { nullable: true }),
    deliveredThrough: t.string({
      description: 'Event cursor (a sequence, as digits) through which events have been delivered.',
      resolve: (endpoint) => String(endpoint.deliveredThrough),
    }),
    failingSince: t.expose('failingSince', {
      type: 'DateTime',
      nullable: true,
      description: 'When the next event first failed; null while nothing fails.',
    }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const WebhookDeliveryRef = builder.objectRef<WebhookDelivery>('WebhookDelivery').implement({
  description: 'One attempt at delivering one event.',
  fields: (t) => ({
    eventId: t.exposeString('eventId'),
    sequence: t.string({
      description: 'The event’s sequence in the account log, as digits.',
      resolve: (delivery) => String(delivery.sequence),
    }),
    attempt: t.exposeInt('attempt', { description: '1 for the first try of this event.' }),
    statusCode: t.exposeInt('statusCode', {
      nullable: true,
      description: 'The receiver’s HTTP status; null when no answer came.',
    }),
    error: t.exposeString('error', { nullable: true }),
    durationMs: t.exposeInt('durationMs'),
    delivered: t.exposeBoolean('delivered'),
    nextAttemptAt: t.expose('nextAttemptAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When the event is tried again; null once delivered.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const WebhookDeliveryPageRef = builder.objectRef<DeliveryPage>('WebhookDeliveryPage').implement({
  fields: (t) => ({
    deliveries: t.field({ type: [WebhookDeliveryRef], resolve: (page) => page.deliveries }),
    hasMore: t.exposeBoolean('hasMore'),
    nextCursor: t.exposeString('nextCursor', {
      nullable: true,
      description: 'Ask with after: nextCursor for the next (older) page; null at the end.',
    }),
  }),
});

const CreatedWebhookRef = builder
  .objectRef<{ endpoint: WebhookEndpoint; secret: string }>('CreatedWebhook')
  .implement({
    fields: (t) => ({
      webhook: t.field({ type: WebhookEndpointRef, resolve: (created) => created.endpoint }),
      secret: t.exposeString('secret', {
        description:
          'whsec_…: the signing secret, shown only here (and by rotateWebhookSecret). Store it now.',
      }),
    }),
  });

const RotatedWebhookSecretRef = builder
  .objectRef<{ id: string; secret: string; previousSecretExpiresAt: Date }>('RotatedWebhookSecret')
  .implement({
    fields: (t) => ({
      id: t.exposeID('id'),
      secret: t.exposeString('secret', { description: 'The new secret, shown only here.' }),
      previousSecretExpiresAt: t.expose('previousSecretExpiresAt', {
        type: 'DateTime',
        description: 'Until then deliveries carry a second v1= signature, made with the old secret.',
      }),
    }),
  });

const WebhookReplayRef = builder.objectRef<{ id: string; replayFrom: bigint }>('WebhookReplay').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    replayFrom: t.string({
      description: 'The cursor delivery restarts after: the next event delivered is the one after it.',
      resolve: (replay) => String(replay.replayFrom),
    }),
  }),
});

builder.queryFields((t) => ({
  webhooks: t.field({
    type: [WebhookEndpointRef],
    description:
      'The viewer’s webhook endpoints, oldest first (REST GET /webhooks). Needs a key holding every scope.',
    authScopes: { read: true },
    resolve: (_root, _args, ctx) => listWebhooks(ctx.deps, ctx.viewer!),
  }),
  webhookDeliveries: t.field({
    type: WebhookDeliveryPageRef,
    description: `One endpoint’s delivery log, newest first (REST GET /webhooks/{id}/deliveries): \`first\` 1 to ${DELIVERY_PAGE_MAX}, default 20; \`after\` a page’s nextCursor. Needs a key holding every scope.`,
    authScopes: { read: true },
    args: { id: t.arg.id({ required: true }), first: t.arg.int(), after: t.arg.string() },
    resolve: (_root, { id, first, after }, ctx) =>
      webhookDeliveries(ctx.deps, ctx.viewer!, String(id), { limit: first ?? undefined, cursor: after }),
  }),
}));

builder.mutationFields((t) => ({
  createWebhook: t.field({
    type: CreatedWebhookRef,
    description: `Add a webhook endpoint (at most ${MAX_WEBHOOK_ENDPOINTS}): https (http only to a loopback address outside production), its host resolving to public addresses only. \`events\`: the types to receive, default every type. The secret is answered only here. Needs a key holding every scope.`,
    authScopes: { read: true },
    rateLimit: 'webhooks',
    args: { url: t.arg.string({ required: true }), events: t.arg.stringList() },
    resolve: (_root, { url, events }, ctx) => createWebhook(ctx.deps, ctx.viewer!, { url, events }),
  }),
  deleteWebhook: t.boolean({
    description:
      'Delete an endpoint and its delivery log; true once deleted. Needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'webhooks',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await deleteWebhook(ctx.deps, ctx.viewer!, String(id));
      return true;
    },
  }),
  rotateWebhookSecret: t.field({
    type: RotatedWebhookSecretRef,
    description:
      'A new signing secret; the old one keeps signing beside it for 24 h. Needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'webhooks',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => rotateWebhookSecret(ctx.deps, ctx.viewer!, String(id)),
  }),
  enableWebhook: t.field({
    type: WebhookEndpointRef,
    description:
      'Enable a disabled endpoint: its backlog follows, in order. Needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'webhooks',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => enableWebhook(ctx.deps, ctx.viewer!, String(id)),
  }),
  replayWebhook: t.field({
    type: WebhookReplayRef,
    description:
      'Deliver again, in order, every event after `after` (an event cursor; none: from the start of the kept log). Needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'webhooks',
    args: { id: t.arg.id({ required: true }), after: t.arg.string() },
    resolve: (_root, { id, after }, ctx) => replayWebhook(ctx.deps, ctx.viewer!, String(id), after),
  }),
}));
