import { AppError } from '../errors.js';
import { EVENT_TYPES, isEventType, type EventType } from '../events/event-types.js';

/** The limit: each endpoint is a delivery stream of its own to keep in order. */
export const MAX_WEBHOOK_ENDPOINTS = 5;

/** How long a rotated-out secret keeps signing beside the new one (a second `v1=`). */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

export type WebhookStatus = 'enabled' | 'disabled';

/** An endpoint as its owner sees it: never its secret, which is shown once. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  eventTypes: EventType[];
  status: WebhookStatus;
  /** Why the dispatcher disabled it (its retry window ran out); null while enabled. */
  disabledReason: string | null;
  /** The sequence of the account's log through which it has been served (delivered or skipped). */
  deliveredThrough: bigint;
  /** When the event after deliveredThrough first failed; null while nothing fails. */
  failingSince: Date | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** One attempt at one event, as the delivery log shows it. */
export interface WebhookDelivery {
  /** Position in the log (newest first): the page cursor. */
  id: bigint;
  eventId: string;
  sequence: bigint;
  attempt: number;
  /** The receiver's HTTP status; null when no answer came (see error). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  delivered: boolean;
  /** When this event is tried again; null once delivered or given up. */
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/**
 * The event types an endpoint subscribes to: every type when none are given; otherwise a non-empty
 * list of known types, duplicates dropped, in the order EVENT_TYPES lists them.
 */
export function subscribedEventTypes(requested: readonly string[] | null | undefined): EventType[] {
  if (requested === null || requested === undefined) return [...EVENT_TYPES];
  if (requested.length === 0)
    throw new AppError('invalid_request', 'events: name at least one event type, or leave it out for all', {
      field: 'events',
    });
  const unknown = requested.filter((type) => !isEventType(type));
  if (unknown.length > 0) {
    throw new AppError(
      'invalid_request',
      `events: unknown event type ${JSON.stringify(unknown[0])}; known types: ${EVENT_TYPES.join(', ')}`,
      { field: 'events' },
    );
  }
  return EVENT_TYPES.filter((type) => requested.includes(type));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `id` can name an endpoint. Anything else names none: 404 like an unknown UUID, and
 * Postgres is never handed a value its uuid type would refuse.
 */
export function isWebhookId(id: string): boolean {
  return UUID.test(id);
}
