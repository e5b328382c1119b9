import { randomUUID } from 'node:crypto';
import { checkWebhookUrl, type HostResolver } from '../../adapters/http/webhook-address.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  deleteWebhook as deleteWebhookRow,
  enableWebhook as enableWebhookRow,
  findWebhook,
  insertWebhookWithinLimit,
  listDeliveries,
  listWebhooks as listWebhookRows,
  replayWebhook as replayWebhookRow,
  rotateWebhookSecret as rotateWebhookSecretRow,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../../adapters/postgres/webhooks.repository.js';
import { requireFullKey, type Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { parsePageLimit } from '../../domain/pagination/page-limit.js';
import type { EventType } from '../../domain/events/event-types.js';
import type { WebhookUrlPolicy } from '../../domain/webhooks/url-policy.js';
import {
  isWebhookId,
  MAX_WEBHOOK_ENDPOINTS,
  PREVIOUS_SECRET_TTL_MS,
  subscribedEventTypes,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../../domain/webhooks/webhook-endpoint.js';
import type { WebhookSecretBox } from '../../domain/webhooks/webhook-secret-box.js';
import { generateWebhookSecret } from '../../domain/webhooks/webhook-secret.js';

/*
 * Webhook endpoint management: the one core REST /webhooks and the GraphQL webhook fields call.
 * Every step needs a key holding every scope: an endpoint receives everything that happens to the
 * account's money, so a key delegated for one purpose (a read-only dashboard, a like bot) must not
 * be able to point that stream somewhere else, nor read where it goes.
 */

export interface WebhookManagementDeps {
  db: Db;
  webhookUrlPolicy: WebhookUrlPolicy;
  /** Seals a secret before it is stored: Postgres never holds one in clear. */
  webhookSecrets: Pick<WebhookSecretBox, 'seal'>;
  /** Tests inject names; @defaultValue the OS resolver */
  resolveHost?: HostResolver;
}

type Caller = Pick<Viewer, 'accountId' | 'scopes'>;

const ACTION = 'Managing webhooks';

export const DELIVERY_PAGE_DEFAULT = 20;
export const DELIVERY_PAGE_MAX = 100;
/**
 * Events one replay may send (issue 49): a replay asking for more is refused with the number it
 * would send, so a tenant cannot queue its whole kept log (and a delivery log row per event) at
 * once. One replay per endpoint is in flight at a time.
 */
export const MAX_REPLAY_EVENTS = 1_000;

/** A new endpoint with its signing secret: the only time the secret is shown. */
export async function createWebhook(
  deps: WebhookManagementDeps,
  caller: Caller,
  input: { url: string; events?: readonly string[] | null },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  requireFullKey(caller, ACTION);
  const eventTypes = subscribedEventTypes(input.events);
  const checked = await checkWebhookUrl(input.url, deps.webhookUrlPolicy, deps.resolveHost);
  if (!checked.ok) throw new AppError('invalid_request', `url refused: ${checked.reason}`, { field: 'url' });
  const secret = generateWebhookSecret();
  // The id is chosen here: the sealed secret is bound to it.
  const id = randomUUID();
  const row = await insertWebhookWithinLimit(
    deps.db,
    caller.accountId,
    { id, url: checked.url.href, eventTypes, sealedSecret: deps.webhookSecrets.seal(secret, id) },
    MAX_WEBHOOK_ENDPOINTS,
  );
  if (row === 'limit') {
    throw new AppError(
      'conflict',
      `An account may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one before adding another`,
    );
  }
  return { endpoint: endpointOf(row), secret };
}

export async function listWebhooks(deps: WebhookManagementDeps, caller: Caller): Promise<WebhookEndpoint[]> {
  requireFullKey(caller, ACTION);
  return (await listWebhookRows(deps.db, caller.accountId)).map(endpointOf);
}

export async function getWebhook(
  deps: WebhookManagementDeps,
  caller: Caller,
  id: string,
): Promise<WebhookEndpoint> {
  requireFullKey(caller, ACTION);
  return endpointOf(
    found(isWebhookId(id) ? await findWebhook(deps.db, caller.accountId, id) : undefined, id),
  );
}

export async function deleteWebhook(deps: WebhookManagementDeps, caller: Caller, id: string): Promise<void> {
  requireFullKey(caller, ACTION);
  found(isWebhookId(id) && (await deleteWebhookRow(deps.db, caller.accountId, id)), id);
}

/** A new secret, shown this once; the old one signs beside it until `previousSecretExpiresAt`. */
export async function rotateWebhookSecret(
  deps: WebhookManagementDeps,
  caller: Caller,
  id: string,
): Promise<{ id: string; secret: string; previousSecretExpiresAt: Date }> {
  requireFullKey(caller, ACTION);
  const secret = generateWebhookSecret();
  const row = found(
    isWebhookId(id)
      ? await rotateWebhookSecretRow(
          deps.db,
          caller.accountId,
          id,
          deps.webhookSecrets.seal(secret, id),
          PREVIOUS_SECRET_TTL_MS,
        )
      : undefined,
    id,
  );
  return { id: row.id, secret, previousSecretExpiresAt: row.previous_secret_expires_at };
}

/** Enabled again (after the dispatcher disabled it); the backlog follows in order. */
export async function enableWebhook(
  deps: WebhookManagementDeps,
  caller: Caller,
  id: string,
): Promise<WebhookEndpoint> {
  requireFullKey(caller, ACTION);
  return endpointOf(
    found(isWebhookId(id) ? await enableWebhookRow(deps.db, caller.accountId, id) : undefined, id),
  );
}

/**
 * Delivers again, in order, every event after `after` (an event-log cursor; none: from the start
 * of the kept log). The status does not change: a disabled endpoint replays once enabled.
 */
export async function replayWebhook(
  deps: WebhookManagementDeps,
  caller: Caller,
  id: string,
  after: string | number | null | undefined,
): Promise<{ id: string; replayFrom: bigint }> {
  requireFullKey(caller, ACTION);
  const from = typeof after === 'number' ? integerCursor(after) : textCursor(after);
  if (from === undefined)
    throw new AppError(
      'invalid_request',
      'after: expected an event cursor (the sequence of an event, as digits)',
      {
        field: 'after',
      },
    );
  const result = found(
    isWebhookId(id)
      ? await replayWebhookRow(deps.db, caller.accountId, id, from, MAX_REPLAY_EVENTS)
      : undefined,
    id,
  );
  if (!('kind' in result)) return { id: result.id, replayFrom: result.delivered_through };
  switch (result.kind) {
    case 'beyond':
      throw new AppError('invalid_request', `after: ${from} is past the account's last event`, {
        field: 'after',
      });
    case 'in-flight':
      throw new AppError(
        'conflict',
        `A replay of this endpoint is still being sent (delivered through event ${result.deliveredThrough} ` +
          `of ${result.replayThrough}): one replay at a time; ask again once it is done`,
        { deliveredThrough: String(result.deliveredThrough), replayThrough: String(result.replayThrough) },
      );
    case 'too-many':
      throw new AppError(
        'invalid_request',
        `after: this replay would send ${result.events} events; a replay sends at most ${MAX_REPLAY_EVENTS}: ` +
          'replay from a later cursor, and the rest after it is done',
        { field: 'after', events: result.events, maxEvents: MAX_REPLAY_EVENTS },
      );
  }
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[];
  hasMore: boolean;
  /** Present only when hasMore: the cursor of the next (older) page. */
  nextCursor: string | null;
}

/** The endpoint's delivery log, newest first; `cursor` is a page's nextCursor. */
export async function webhookDeliveries(
  deps: WebhookManagementDeps,
  caller: Caller,
  id: string,
  page: { limit?: unknown; cursor?: string | null },
): Promise<DeliveryPage> {
  requireFullKey(caller, ACTION);
  const limit = deliveryLimit(page.limit);
  const before = deliveryCursor(page.cursor);
  found(isWebhookId(id) ? await findWebhook(deps.db, caller.accountId, id) : undefined, id);
  const rows = await listDeliveries(deps.db, id, {
    limit: limit + 1,
    ...(before === undefined ? {} : { before }),
  });
  const deliveries = rows.slice(0, limit).map(deliveryOf);
  const hasMore = rows.length > limit;
  return { deliveries, hasMore, nextCursor: hasMore ? String(deliveries.at(-1)!.id) : null };
}

function found<T>(value: T | undefined | false, id: string): T {
  if (value === undefined || value === false) throw new AppError('not_found', `No webhook endpoint ${id}`);
  return value;
}

/**
 * An event-log cursor: the decimal sequence of an event (0 or none: before the first), as the
 * log's pages hand them out.
 */
function textCursor(value: string | null | undefined): bigint | undefined {
  if (value === undefined || value === null || value === '') return 0n;
  return /^\d{1,18}$/.test(value) ? BigInt(value) : undefined;
}

function integerCursor(value: number): bigint | undefined {
  return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
}

function deliveryLimit(value: unknown): number {
  return parsePageLimit(value === '' ? undefined : value, {
    max: DELIVERY_PAGE_MAX,
    fallback: DELIVERY_PAGE_DEFAULT,
  });
}

/** A delivery cursor is the id of the last attempt seen (digits); anything else is 400. */
function deliveryCursor(value: string | null | undefined): bigint | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (!/^\d{1,18}$/.test(value))
    throw new AppError('invalid_request', 'cursor: expected the next_cursor of a previous page', {
      field: 'cursor',
    });
  return BigInt(value);
}

function endpointOf(row: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    eventTypes: row.event_types as EventType[],
    status: row.status,
    disabledReason: row.disabled_reason,
    deliveredThrough: row.delivered_through,
    failingSince: row.failing_since,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
  };
}

function deliveryOf(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    sequence: row.sequence,
    attempt: row.attempt,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    delivered: row.delivered,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
  };
}
