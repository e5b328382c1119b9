import { sql, type Selectable } from 'kysely';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from './database.js';
import type { Db } from './db.js';

/*
 * Webhook endpoints as their owner manages them (create, list, delete, rotate, enable, replay) and
 * their delivery log. Every statement names the owner's account beside the endpoint id, so an id
 * of another account's endpoint finds nothing. The dispatcher's own statements (leases, attempts)
 * are in webhook-deliveries.repository.ts.
 */

/** The columns the owner may see: never `secret` nor `previous_secret`. */
const VISIBLE = [
  'id',
  'url',
  'event_types',
  'status',
  'disabled_reason',
  'delivered_through',
  'failing_since',
  'next_attempt_at',
  'created_at',
] as const;

export type WebhookEndpointRow = Pick<Selectable<WebhookEndpointsTable>, (typeof VISIBLE)[number]>;
export type WebhookDeliveryRow = Omit<Selectable<WebhookDeliveriesTable>, 'endpoint_id'>;

/**
 * Inserts the endpoint unless the account already has `max`, deciding under a lock on the account
 * row so two concurrent creations cannot both take the last slot (FOR NO KEY UPDATE: it queues
 * other creations and api-key changes, not the foreign-key checks of the paid write path).
 * It starts at the account's current head: it receives what happens from now on, and replay
 * fills in anything earlier. An event numbered while this commits gets a sequence above the head
 * read here (the sequencer commits its batch before the next one reads the head), so none falls
 * between.
 */
export async function insertWebhookWithinLimit(
  db: Db,
  accountId: string,
  endpoint: { id: string; url: string; eventTypes: readonly string[]; sealedSecret: string },
  max: number,
): Promise<WebhookEndpointRow | 'limit'> {
  return db.transaction().execute(async (trx) => {
    await trx
      .selectFrom('accounts')
      .select('id')
      .where('id', '=', accountId)
      .forNoKeyUpdate()
      .executeTakeFirstOrThrow();
    const { count } = await trx
      .selectFrom('webhook_endpoints')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    if (count >= max) return 'limit' as const;
    return trx
      .insertInto('webhook_endpoints')
      .values({
        // The id the secret was sealed for (its associated data): chosen by the caller.
        id: endpoint.id,
        account_id: accountId,
        url: endpoint.url,
        event_types: [...endpoint.eventTypes],
        secret: endpoint.sealedSecret,
        delivered_through: sql<bigint>`coalesce(
          (SELECT last_sequence FROM account_event_heads WHERE account_id = ${accountId}), 0)`,
      })
      .returning(VISIBLE)
      .executeTakeFirstOrThrow();
  });
}

/** The account's endpoints, oldest first. */
export function listWebhooks(db: Db, accountId: string): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .select(VISIBLE)
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function findWebhook(db: Db, accountId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .select(VISIBLE)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Deletes the endpoint and (cascade) its delivery log; false when the account has no such one. */
export async function deleteWebhook(db: Db, accountId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('webhook_endpoints')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * A new secret; the current one signs beside it for `previousTtlMs` so receivers can switch
 * without dropping a delivery. A second rotation inside that window retires the oldest secret at
 * once: only the two newest ever sign.
 */
export async function rotateWebhookSecret(
  db: Db,
  accountId: string,
  id: string,
  sealedSecret: string,
  previousTtlMs: number,
): Promise<{ id: string; previous_secret_expires_at: Date } | undefined> {
  const row = await db
    .updateTable('webhook_endpoints')
    .set({
      // SET reads the row as it was: previous_secret takes the secret being replaced.
      previous_secret: sql<string>`secret`,
      previous_secret_expires_at: sql<Date>`now() + make_interval(secs => ${previousTtlMs / 1000})`,
      secret: sealedSecret,
      updated_at: sql<Date>`now()`,
    })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returning(['id', 'previous_secret_expires_at'])
    .executeTakeFirst();
  return row && { id: row.id, previous_secret_expires_at: row.previous_secret_expires_at! };
}

/**
 * Enabled again, with a fresh attempt state: the event after `delivered_through` (the one whose
 * failures disabled it) is tried at once, and the backlog follows in order.
 */
export function enableWebhook(
  db: Db,
  accountId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      status: 'enabled',
      disabled_reason: null,
      attempt: 0,
      failing_since: null,
      next_attempt_at: null,
      updated_at: sql<Date>`now()`,
    })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returning(VISIBLE)
    .executeTakeFirst();
}

/** Why a replay was not made: see replayWebhook. */
export type ReplayRefusal =
  | { kind: 'beyond' }
  | { kind: 'in-flight'; deliveredThrough: bigint; replayThrough: bigint }
  | { kind: 'too-many'; events: number };

/**
 * Moves the endpoint's cursor back to `after` (status unchanged: a disabled endpoint replays once
 * enabled), so every event after it is delivered again, in order. Refused ('beyond') when `after`
 * is past the account's last event: a cursor there would silently skip the events numbered up to
 * it; ('in-flight') while the endpoint's previous replay is still being sent; ('too-many') when it
 * would send more than `maxEvents` subscribed events (counted under the endpoint's lock, up to the
 * account's last event).
 */
export async function replayWebhook(
  db: Db,
  accountId: string,
  id: string,
  after: bigint,
  maxEvents: number,
): Promise<{ id: string; delivered_through: bigint } | ReplayRefusal | undefined> {
  return db.transaction().execute(async (trx) => {
    const endpoint = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'event_types', 'delivered_through', 'replay_through'])
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!endpoint) return undefined;
    const head = await trx
      .selectFrom('account_event_heads')
      .select('last_sequence')
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    const last = head?.last_sequence ?? 0n;
    if (after > last) return { kind: 'beyond' as const };
    if (endpoint.replay_through !== null && endpoint.delivered_through < endpoint.replay_through) {
      return {
        kind: 'in-flight' as const,
        deliveredThrough: endpoint.delivered_through,
        replayThrough: endpoint.replay_through,
      };
    }
    const { events } = await trx
      .selectFrom('account_events')
      .select(sql<number>`count(*)::int`.as('events'))
      .where('account_id', '=', accountId)
      .where('sequence', '>', after)
      .where('sequence', '<=', last)
      .where('type', '=', sql<string>`ANY(${endpoint.event_types}::text[])`)
      .executeTakeFirstOrThrow();
    if (events > maxEvents) return { kind: 'too-many' as const, events };
    return trx
      .updateTable('webhook_endpoints')
      .set({
        delivered_through: after,
        attempt: 0,
        failing_since: null,
        next_attempt_at: null,
        // Nothing to send: nothing in flight, a next replay may follow at once.
        replay_through: events > 0 ? last : null,
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .returning(['id', 'delivered_through'])
      .executeTakeFirstOrThrow();
  });
}

/** A page of the endpoint's attempts, newest first; `before` is the id of the last row seen. */
export function listDeliveries(
  db: Db,
  endpointId: string,
  page: { limit: number; before?: bigint },
): Promise<WebhookDeliveryRow[]> {
  let query = db
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'event_id',
      'sequence',
      'attempt',
      'status_code',
      'error',
      'duration_ms',
      'delivered',
      'next_attempt_at',
      'created_at',
    ])
    .where('endpoint_id', '=', endpointId);
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  return query.orderBy('id', 'desc').limit(page.limit).execute();
}
