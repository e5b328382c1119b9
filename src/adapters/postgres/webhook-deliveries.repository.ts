import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * Delivery state of webhook endpoints, all in `webhook_endpoints` (schema/postgres/
 * 2026_11_27_b_event_log.ts): the cursor `delivered_through`, the attempt state of the event after
 * it, and a lease.
 *
 * The lease (`lease_owner`, `lease_expires_at`, Postgres clock) is what keeps two dispatchers (two
 * worker processes) from delivering to one endpoint at once: a dispatcher claims an endpoint, renews
 * the lease while it works (every write below renews it, and a timer renews idle ones), and every
 * write is guarded by `lease_owner` as well as by the cursor it read. A dispatcher killed with
 * SIGKILL stops renewing, and its endpoints are claimed again once LEASE_MS has passed. A session
 * advisory lock per endpoint would be released at once on a kill, but needs a connection held for
 * as long as the dispatcher runs and a lock call per endpoint and claim; a lease is one column in
 * the row every write touches anyway, and is visible in the table.
 *
 * Every write is a compare-and-set on `delivered_through` (and status 'enabled'): a replay or an
 * enable by the API meanwhile moves the cursor or the status, the dispatcher's write then matches
 * nothing, and the dispatcher lets the endpoint go and claims it again as the API left it.
 */

/** Whoever holds a lease this long without renewing it has died (or lost Postgres): it is free. */
export const LEASE_MS = 15_000;

/**
 * Endpoints of one account leased at once, by every dispatcher together (issue 49): one account's
 * five endpoints, however slow, hold at most this many delivery slots. Two claims at the same
 * instant by two dispatchers may pass it by one each; the next claims then wait until it holds.
 */
export const MAX_LEASED_PER_ACCOUNT = 2;

export interface ClaimedEndpoint {
  id: string;
  accountId: string;
  url: string;
  eventTypes: string[];
  secrets: EndpointSecrets;
  deliveredThrough: bigint;
  /** Failed attempts so far at the event after `deliveredThrough`. */
  attempt: number;
  failingSince: Date | null;
}

export interface EndpointSecrets {
  secret: string;
  previousSecret: string | null;
  /** Until when the previous secret signs beside the new one (a rotation's 24 h). */
  previousSecretExpiresAt: Date | null;
}

interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  event_types: string[];
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  delivered_through: bigint;
  attempt: number;
  failing_since: Date | null;
}

const leaseEnd = sql`now() + ${LEASE_MS} * interval '1 millisecond'`;

/**
 * Leases up to `limit` endpoints that have something to deliver now: enabled, not waiting for a
 * retry, with events above their cursor, and no live lease (`running`: endpoints this dispatcher
 * already works on, never claimed twice). SKIP LOCKED: two dispatchers claiming at once take
 * different endpoints instead of queueing on each other.
 *
 * Round-robin by account (issue 49): an endpoint's turn is its rank among its account's due
 * endpoints plus the account's endpoints already leased, and no account gets a turn past
 * MAX_LEASED_PER_ACCOUNT; within a turn, the endpoint untouched longest (`updated_at`: a run that
 * gave its slot back went to the back of the line) goes first. So one account's first endpoint
 * comes before any account's second, and a tenant replaying five slow endpoints holds two slots.
 */
export async function claimDueEndpoints(
  db: Db,
  options: { owner: string; limit: number; running: readonly string[] },
): Promise<ClaimedEndpoint[]> {
  if (options.limit <= 0) return [];
  const { rows } = await sql<EndpointRow>`
    WITH candidates AS (
      SELECT w.id, w.updated_at,
             row_number() OVER (PARTITION BY w.account_id ORDER BY w.updated_at, w.id)
               + (SELECT count(*) FROM webhook_endpoints l
                   WHERE l.account_id = w.account_id AND l.lease_owner IS NOT NULL
                     AND l.lease_expires_at >= now()) AS turn
        FROM webhook_endpoints w
        JOIN account_event_heads h ON h.account_id = w.account_id
       WHERE w.status = 'enabled'
         AND h.last_sequence > w.delivered_through
         AND (w.next_attempt_at IS NULL OR w.next_attempt_at <= now())
         AND (w.lease_owner IS NULL OR w.lease_expires_at < now())
         AND w.id <> ALL(${[...options.running]}::uuid[]))
    UPDATE webhook_endpoints e
       SET lease_owner = ${options.owner}, lease_expires_at = ${leaseEnd}
      FROM (SELECT w.id
              FROM webhook_endpoints w
              JOIN candidates c ON c.id = w.id
             WHERE c.turn <= ${MAX_LEASED_PER_ACCOUNT}
               AND (w.lease_owner IS NULL OR w.lease_expires_at < now())
             ORDER BY c.turn, c.updated_at, w.id
             LIMIT ${options.limit}
               FOR UPDATE OF w SKIP LOCKED) due
     WHERE e.id = due.id
    RETURNING e.id, e.account_id, e.url, e.event_types, e.secret, e.previous_secret,
              e.previous_secret_expires_at, e.delivered_through, e.attempt, e.failing_since`.execute(db);
  return rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    eventTypes: row.event_types,
    secrets: secretsOf(row),
    deliveredThrough: row.delivered_through,
    attempt: row.attempt,
    failingSince: row.failing_since,
  }));
}

/** Pushes back the expiry of the leases `owner` holds on `ids` (those it still holds). */
export async function renewLeases(db: Db, owner: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE webhook_endpoints SET lease_expires_at = ${leaseEnd}
     WHERE lease_owner = ${owner} AND id = ANY(${[...ids]}::uuid[])`.execute(db);
}

/** Lets endpoints go (caught up, or stopping): another dispatcher may claim them at once. */
export async function releaseLeases(db: Db, owner: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE webhook_endpoints SET lease_owner = NULL, lease_expires_at = NULL
     WHERE lease_owner = ${owner} AND id = ANY(${[...ids]}::uuid[])`.execute(db);
}

/** What a write expects of the endpoint: its lease, and the cursor the dispatcher read. */
export interface EndpointGuard {
  endpointId: string;
  owner: string;
  /** `delivered_through` as the dispatcher knows it. */
  from: bigint;
}

export interface AttemptRecord {
  eventId: string;
  sequence: bigint;
  /** This attempt's number at the event (1 = first). */
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** A delivered event, as recordDelivered writes it. */
export interface DeliveredRecord {
  guard: EndpointGuard;
  record: AttemptRecord;
  /** The dispatcher is done with the endpoint (its last event read): the lease goes with the record. */
  release: boolean;
}

/**
 * Delivered events of any number of endpoints (one each), in one statement: each endpoint's
 * cursor moves to its event (events before it that the endpoint does not subscribe to are passed
 * with it), its attempt state clears, its lease is renewed (or released), and each attempt is logged. One
 * statement, one commit for a whole batch: under a backlog the dispatcher's many endpoints finish
 * deliveries every few microseconds, and a commit each was most of Postgres' work.
 *
 * Answers, by endpoint id, the current secrets of each endpoint whose guard held (a rotation lands
 * in its next delivery); an endpoint missing from the answer was replayed, disabled, deleted or
 * lost its lease meanwhile. Its attempt is logged either way, as it happened (unless the endpoint
 * is gone: its log went with it).
 */
export async function recordDelivered(
  db: Db,
  delivered: readonly DeliveredRecord[],
): Promise<Map<string, EndpointSecrets>> {
  if (delivered.length === 0) return new Map();
  const input = [...delivered]
    .sort((a, b) => (a.guard.endpointId < b.guard.endpointId ? -1 : 1))
    .map(({ guard, record, release }) => ({
      endpoint_id: guard.endpointId,
      owner: guard.owner,
      from_sequence: guard.from.toString(),
      event_id: record.eventId,
      sequence: record.sequence.toString(),
      attempt: record.attempt,
      status_code: record.statusCode,
      duration_ms: record.durationMs,
      release,
    }));
  const { rows } = await sql<
    Pick<EndpointRow, 'id' | 'secret' | 'previous_secret' | 'previous_secret_expires_at'>
  >`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
        AS x (endpoint_id uuid, owner text, from_sequence bigint, event_id text, sequence bigint,
              attempt integer, status_code integer, duration_ms integer, release boolean)),
    moved AS (
      UPDATE webhook_endpoints e
         SET delivered_through = i.sequence, attempt = 0, failing_since = NULL, next_attempt_at = NULL,
             lease_owner = CASE WHEN i.release THEN NULL ELSE e.lease_owner END,
             lease_expires_at = CASE WHEN i.release THEN NULL ELSE ${leaseEnd} END,
             updated_at = now()
        FROM input i
       WHERE e.id = i.endpoint_id AND e.lease_owner = i.owner
         AND e.delivered_through = i.from_sequence AND e.status = 'enabled'
      RETURNING e.id, e.secret, e.previous_secret, e.previous_secret_expires_at),
    locked AS (
      -- The log rows go only to endpoints this statement holds a lock on (issue 49): those "moved"
      -- updated, and the others locked here FOR KEY SHARE (rows "moved" updated are skipped by
      -- this lock, being this statement's own). An endpoint being deleted is waited for, then
      -- skipped: never found by a snapshot and failed on by the foreign key, which failed the whole
      -- batch (every other endpoint in it got its event again). Held, a lock keeps the endpoint
      -- until this commits.
      SELECT w.id FROM webhook_endpoints w
       WHERE w.id IN (SELECT endpoint_id FROM input)
         FOR KEY SHARE),
    logged AS (
      INSERT INTO webhook_deliveries
             (endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, delivered)
      SELECT i.endpoint_id, i.event_id, i.sequence, i.attempt, i.status_code, NULL, i.duration_ms, true
        FROM input i
       WHERE i.endpoint_id IN (SELECT id FROM moved) OR i.endpoint_id IN (SELECT id FROM locked))
    SELECT * FROM moved`.execute(db);
  return new Map(rows.map((row) => [row.id, secretsOf(row)]));
}

/**
 * A failed attempt: the endpoint waits until `nextAttemptAt` and its lease is released (any
 * dispatcher may retry), or, past the retry window, it is disabled with `disabledReason`. Logged
 * in the same statement. False when the guard no longer holds.
 */
export async function recordFailed(
  db: Db,
  guard: EndpointGuard,
  record: AttemptRecord,
  outcome: { failingSince: Date } & ({ nextAttemptAt: Date } | { disabledReason: string }),
): Promise<boolean> {
  const nextAttemptAt = 'nextAttemptAt' in outcome ? outcome.nextAttemptAt : null;
  const disabledReason = 'disabledReason' in outcome ? outcome.disabledReason : null;
  const { rows } = await sql<{ id: string }>`
    WITH moved AS (
      UPDATE webhook_endpoints
         SET attempt = ${record.attempt}, failing_since = ${outcome.failingSince},
             next_attempt_at = ${nextAttemptAt},
             status = ${disabledReason === null ? 'enabled' : 'disabled'},
             disabled_reason = ${disabledReason},
             lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE id = ${guard.endpointId} AND lease_owner = ${guard.owner}
         AND delivered_through = ${guard.from} AND status = 'enabled'
      RETURNING id),
    logged AS (
      ${logAttempt(guard.endpointId, record, false, nextAttemptAt)})
    SELECT id FROM moved`.execute(db);
  return rows.length > 0;
}

/**
 * Moves the cursor over events the endpoint does not subscribe to (up to `through`, the account's
 * last sequence when its subscribed events were all delivered), so it is not claimed for them
 * again, and releases the lease (the dispatcher is done with it). Clears the attempt state: a
 * failing event no longer in the log (purged) is not waited for. False when the guard no longer
 * holds.
 */
export async function skipUnsubscribed(db: Db, guard: EndpointGuard, through: bigint): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    UPDATE webhook_endpoints
       SET delivered_through = ${through}, attempt = 0, failing_since = NULL, next_attempt_at = NULL,
           lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
     WHERE id = ${guard.endpointId} AND lease_owner = ${guard.owner}
       AND delivered_through = ${guard.from} AND status = 'enabled'
    RETURNING id`.execute(db);
  return rows.length > 0;
}

/**
 * The delivery log row of an attempt, in a statement whose "moved" updates the endpoint when its
 * guard holds. Written only while the endpoint exists: one deleted by its owner meanwhile has
 * nothing to log to (its log went with it). Either "moved" holds the row, or it is locked FOR KEY
 * SHARE here (a row "moved" updated is skipped by that lock, being this statement's own): a
 * deletion in flight is waited for, then the row is skipped rather than failing the foreign key.
 */
function logAttempt(
  endpointId: string,
  record: AttemptRecord,
  delivered: boolean,
  nextAttemptAt: Date | null,
) {
  return sql`
      INSERT INTO webhook_deliveries
             (endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, delivered, next_attempt_at)
      SELECT ${endpointId}::uuid, ${record.eventId}, ${record.sequence}, ${record.attempt}, ${record.statusCode}::integer,
             ${record.error}::text, ${record.durationMs}, ${delivered}, ${nextAttemptAt}::timestamptz
       WHERE EXISTS (SELECT 1 FROM moved)
          OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ${endpointId} FOR KEY SHARE)`;
}

/**
 * Keeps the newest `keep` rows of the endpoint's delivery log and deletes the rest (issue 49: a
 * log bounded per endpoint, whatever its replays and retries). One index range: the log's index is
 * (endpoint_id, id DESC). Answers the rows deleted.
 */
export async function pruneDeliveryLog(db: Db, endpointId: string, keep: number): Promise<number> {
  const result = await sql`
    DELETE FROM webhook_deliveries
     WHERE endpoint_id = ${endpointId}
       AND id < (SELECT id FROM webhook_deliveries WHERE endpoint_id = ${endpointId}
                  ORDER BY id DESC OFFSET ${keep - 1} LIMIT 1)`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * The operator's view of the webhook backlog (the metrics): endpoints by state, and the age of the
 * oldest event an enabled endpoint subscribes to and has not received (Postgres clock; 0 when
 * none waits). One indexed read of the log per enabled endpoint.
 */
export async function webhookBacklog(
  db: Db,
): Promise<{ endpoints: Record<string, number>; oldestUndeliveredSeconds: number }> {
  const { rows } = await sql<{ status: string; endpoints: number; oldest_seconds: number | null }>`
    SELECT w.status, count(*)::int AS endpoints,
           extract(epoch FROM now() - min(next_event.created_at))::float8 AS oldest_seconds
      FROM webhook_endpoints w
      LEFT JOIN LATERAL (
        SELECT e.created_at FROM account_events e
         WHERE w.status = 'enabled' AND e.account_id = w.account_id
           AND e.sequence > w.delivered_through AND e.type = ANY(w.event_types)
         ORDER BY e.sequence LIMIT 1) next_event ON true
     GROUP BY w.status`.execute(db);
  return {
    endpoints: Object.fromEntries(rows.map((row) => [row.status, row.endpoints])),
    oldestUndeliveredSeconds: Math.max(0, ...rows.map((row) => row.oldest_seconds ?? 0)),
  };
}

function secretsOf(row: Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>) {
  return {
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  };
}
