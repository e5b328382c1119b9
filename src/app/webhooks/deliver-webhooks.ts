import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type {
  WebhookAttemptKind,
  WebhookOutcome,
  WebhookSender,
} from '../../adapters/http/webhook-sender.js';
import type { Db } from '../../adapters/postgres/db.js';
import { lastSequence, readEvents } from '../../adapters/postgres/event-log.repository.js';
import {
  claimDueEndpoints,
  LEASE_MS,
  MAX_LEASED_PER_ACCOUNT,
  pruneDeliveryLog,
  recordFailed,
  releaseLeases,
  renewLeases,
  skipUnsubscribed,
  type ClaimedEndpoint,
  type EndpointGuard,
  type EndpointSecrets,
} from '../../adapters/postgres/webhook-deliveries.repository.js';
import { EVENT_TYPES, type AccountEvent } from '../../domain/events/event-types.js';
import { afterFailure } from '../../domain/webhooks/retry-schedule.js';
import { signatureHeader } from '../../domain/webhooks/signature.js';
import type { WebhookSecretBox } from '../../domain/webhooks/webhook-secret-box.js';
import { deliveredRecords } from './delivered-records.js';

/** Endpoints delivered to at once by one dispatcher (each one event at a time). */
export const MAX_ACTIVE_ENDPOINTS = 256;
/** Events read per query for one endpoint: one read serves this many deliveries. */
export const EVENT_BATCH = 200;
/**
 * Pause between two looks for due endpoints when nothing woke the dispatcher: bounds how late a
 * retry starts after its time, and how late an event sequenced by another process goes out.
 */
export const DISPATCH_POLL_MS = 250;
/** Held leases are renewed this often (a third of their life: two renewals may fail before one expires). */
const RENEW_MS = Math.floor(LEASE_MS / 3);
/**
 * Event reads of one dispatcher in flight at once. The worker role shares its Postgres pool with
 * everything else in the process (the API's paid writes, when both roles run together): a
 * hundred endpoints starting at once must not queue a hundred reads ahead of them.
 */
export const MAX_CONCURRENT_READS = 4;
/**
 * How long one endpoint's run holds its slot before giving it back (issue 49): a run still busy
 * after this long releases its lease with its next record and the endpoint goes to the back of
 * the line (claims are round-robin by account: claimDueEndpoints), so a tenant's long backlog
 * (a replay) cannot keep a slot from the endpoints waiting behind it.
 */
export const RUN_QUANTUM_MS = 1_000;
/** Delivery log rows kept per endpoint, newest first (issue 49); older ones are pruned. */
export const DELIVERY_LOG_KEEP = 1_000;
/** An endpoint's log is pruned after this many attempts recorded by this dispatcher. */
const PRUNE_EVERY = 100;
/** Shortest pause between two looks for due endpoints. */
const CLAIM_GAP_MS = 10;
/** Longest pause after Postgres failures (doubling from DISPATCH_POLL_MS). */
const MAX_BACKOFF_MS = 10_000;

export interface WebhookDispatcherDeps {
  db: Db;
  sender: WebhookSender;
  logger: Logger;
  /** How long a failing event is retried before its endpoint is disabled (WEBHOOK_RETRY_WINDOW_MS). */
  retryWindowMs: number;
  /** Opens the sealed secrets the endpoints' rows hold (kept unsealed in memory: cheap per delivery). */
  webhookSecrets: Pick<WebhookSecretBox, 'open'>;
  now?: () => Date;
  /** Told each attempt's outcome (the metrics' ledgerfeed_webhook_attempts_total). */
  onAttempt?: (kind: WebhookAttemptKind) => void;
}

export interface WebhookDispatcherOptions {
  /** Names this dispatcher's leases; unset: host, pid and a random part. */
  owner?: string;
  maxActiveEndpoints?: number;
  pollMs?: number;
  batch?: number;
  /** How long a run holds its slot (RUN_QUANTUM_MS). */
  runQuantumMs?: number;
  /** Delivery log rows kept per endpoint (DELIVERY_LOG_KEEP). */
  deliveryLogKeep?: number;
}

export interface WebhookDispatcher {
  /** Look for due endpoints at once (events were just sequenced). */
  wake(): void;
  /**
   * Stops claiming, lets each endpoint's delivery in flight finish and be recorded, releases every
   * lease (another worker may take over at once), closes the connections.
   */
  stop(): Promise<void>;
  /** Deliveries made (2xx) and attempts failed since start: for the bench and the logs. */
  counts(): { delivered: number; failed: number };
}

/**
 * How one endpoint's run ended: its lease released with its last write, released with more to
 * deliver (its RUN_QUANTUM_MS were up), still to release (nothing was left to deliver, or
 * stopping), or taken from it (replayed, disabled or enabled by the API, deleted, lease expired).
 */
type RunEnd = 'released' | 'yielded' | 'caught-up' | 'stopped' | 'lost';

/**
 * The webhook dispatcher (issue 39): claims endpoints with something due (a lease in Postgres, so
 * several worker processes share the work and never deliver to one endpoint at once), and for each
 * runs its queue in sequence order, one event at a time: the next event is sent only once the
 * previous one is delivered, so a receiver never has to re-sort. Many endpoints run at once.
 *
 * Every delivery is written before the next is sent (cursor, attempt state and delivery log in one
 * statement), so a kill loses nothing: after a restart (or the lease's expiry, for another
 * process) the endpoint resumes at its cursor, and only the events in flight at the kill go out
 * twice. Nothing lives in Redis. Per delivery: at most one Postgres round trip (the record,
 * shared with the other endpoints' records of the moment: delivered-records.ts), plus one or two
 * reads per EVENT_BATCH events.
 */
export function startWebhookDispatcher(
  deps: WebhookDispatcherDeps,
  options: WebhookDispatcherOptions = {},
): WebhookDispatcher {
  const { db, sender, logger: log } = deps;
  const now = deps.now ?? (() => new Date());
  const owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const maxActive = options.maxActiveEndpoints ?? MAX_ACTIVE_ENDPOINTS;
  const pollMs = options.pollMs ?? DISPATCH_POLL_MS;
  const batch = options.batch ?? EVENT_BATCH;
  const quantumMs = options.runQuantumMs ?? RUN_QUANTUM_MS;
  const logKeep = options.deliveryLogKeep ?? DELIVERY_LOG_KEEP;
  const pruneEvery = Math.min(PRUNE_EVERY, Math.max(1, Math.floor(logKeep / 10)));

  /** The endpoints this dispatcher runs, by id: whose they are, and the run. */
  const running = new Map<string, { accountId: string; task: Promise<void> }>();
  const stopping = new AbortController();
  let wakes = 0;
  let kick: (() => void) | undefined;
  const counts = { delivered: 0, failed: 0 };
  const delivered = deliveredRecords(db);
  const reading = slots(MAX_CONCURRENT_READS);
  /** Attempts recorded per endpoint since its log was last pruned. */
  const unpruned = new Map<string, number>();
  const countLogRow = (endpointId: string) => {
    const count = (unpruned.get(endpointId) ?? 0) + 1;
    if (count < pruneEvery) {
      unpruned.set(endpointId, count);
      return;
    }
    unpruned.delete(endpointId);
    void pruneDeliveryLog(db, endpointId, logKeep).catch((error: unknown) =>
      log.warn({ err: error, webhookEndpointId: endpointId }, 'webhook delivery log: pruning failed'),
    );
  };

  const wake = () => {
    wakes++;
    kick?.();
  };

  const deliver = async (endpoint: ClaimedEndpoint, secrets: EndpointSecrets, event: AccountEvent) => {
    const body = JSON.stringify({
      id: event.id,
      type: event.type,
      created_at: event.created_at,
      sequence: event.sequence,
      data: event.data,
    });
    const at = now();
    const signing =
      secrets.previousSecret !== null &&
      secrets.previousSecretExpiresAt !== null &&
      secrets.previousSecretExpiresAt > at
        ? [secrets.secret, secrets.previousSecret]
        : [secrets.secret];
    const opened = signing.map((sealed) => deps.webhookSecrets.open(sealed, endpoint.id));
    return sender.send(endpoint.id, {
      url: endpoint.url,
      body,
      headers: {
        'Ledgerfeed-Signature': signatureHeader(opened, Math.floor(at.getTime() / 1000), body),
        'Ledgerfeed-Event-Id': event.id,
        'Ledgerfeed-Event-Type': event.type,
      },
    });
  };

  /** One endpoint's queue, from its cursor until it is caught up, fails, or is taken from us. */
  const run = async (endpoint: ClaimedEndpoint): Promise<RunEnd> => {
    const quantumEnds = performance.now() + quantumMs;
    let secrets = endpoint.secrets;
    const guard: EndpointGuard = { endpointId: endpoint.id, owner, from: endpoint.deliveredThrough };
    let attempt = endpoint.attempt;
    let failingSince = endpoint.failingSince;
    // Subscribed to everything: the last event delivered is the head, nothing to skip (unless the
    // events above the cursor were purged: an empty read then looks for the head).
    const subscribesToAll = EVENT_TYPES.every((type) => endpoint.eventTypes.includes(type));
    let readHead = !subscribesToAll;
    for (;;) {
      // The head first: every event up to it is committed, so a short read below has seen them all.
      const { head, events } = await reading(async () => {
        const head = readHead ? await lastSequence(db, endpoint.accountId) : undefined;
        const events = await readEvents(db, endpoint.accountId, {
          after: guard.from,
          limit: batch,
          types: subscribesToAll ? undefined : endpoint.eventTypes,
        });
        return { head, events };
      });
      // A short read has seen every event there is: the endpoint is let go with its last record
      // (no read to find nothing, no statement to release). Events sequenced meanwhile wake the
      // dispatcher, which claims it again.
      const lastRead = events.length < batch;
      for (const [index, event] of events.entries()) {
        if (stopping.signal.aborted) return 'stopped';
        const outcome = await deliver(endpoint, secrets, event);
        deps.onAttempt?.(outcome.kind);
        countLogRow(endpoint.id);
        const sequence = BigInt(event.sequence);
        const record = {
          eventId: event.id,
          sequence,
          attempt: attempt + 1,
          statusCode: outcome.statusCode,
          error: outcome.error,
          durationMs: outcome.durationMs,
        };
        if (outcome.delivered) {
          counts.delivered++;
          const caughtUp =
            lastRead && index === events.length - 1 && (head === undefined || head <= sequence);
          // Its time is up: the slot goes back with this record, and the endpoint to the back of the line.
          const yielding = !caughtUp && performance.now() >= quantumEnds;
          const current = await delivered.write({
            guard: { ...guard },
            record,
            release: caughtUp || yielding,
          });
          if (!current) return 'lost';
          if (attempt > 0) logRecovery(endpoint, attempt, failingSince);
          if (caughtUp) return 'released';
          if (yielding) return 'yielded';
          secrets = current;
          guard.from = sequence;
          attempt = 0;
          failingSince = null;
          continue;
        }
        counts.failed++;
        const since = failingSince ?? now();
        const decision = afterFailure({
          failedAttempts: attempt + 1,
          failingSince: since,
          now: now(),
          retryWindowMs: deps.retryWindowMs,
        });
        const recorded = await recordFailed(
          db,
          guard,
          record,
          decision.kind === 'retry'
            ? { failingSince: since, nextAttemptAt: decision.at }
            : { failingSince: since, disabledReason: decision.reason },
        );
        if (!recorded) return 'lost';
        if (decision.kind === 'disable') {
          log.error(
            { webhookEndpointId: endpoint.id, eventId: event.id, sequence: event.sequence },
            `webhook ${endpoint.id} (${hostOf(endpoint.url)}) disabled: ${decision.reason}; last error: ${outcome.error}`,
          );
          return 'released';
        }
        logFailure(endpoint, event, outcome, attempt + 1, decision.at);
        return 'released';
      }
      if (!lastRead) continue;
      if (head !== undefined && head > guard.from) {
        // Every subscribed event up to `head` is delivered: the rest up to it are not for this
        // endpoint (or no longer in the log).
        return (await skipUnsubscribed(db, guard, head)) ? 'released' : 'lost';
      }
      if (events.length === 0 && !readHead) {
        readHead = true;
        continue;
      }
      return 'caught-up';
    }
  };

  const logFailure = (
    endpoint: ClaimedEndpoint,
    event: AccountEvent,
    outcome: WebhookOutcome,
    attempts: number,
    nextAt: Date,
  ) => {
    // The first failure of a streak, then only as the schedule reaches its hourly steps: a receiver
    // down for days costs a few dozen lines, not one per attempt.
    if (attempts !== 1 && attempts % 8 !== 0) return;
    log.warn(
      { webhookEndpointId: endpoint.id, eventId: event.id, sequence: event.sequence, attempts },
      `webhook ${endpoint.id} (${hostOf(endpoint.url)}): event ${event.sequence} not delivered ` +
        `(${outcome.error}) after ${attempts} attempt(s); next try at ${nextAt.toISOString()}, ` +
        'later events wait behind it',
    );
  };

  const logRecovery = (endpoint: ClaimedEndpoint, attempts: number, since: Date | null) => {
    const seconds = since ? Math.round((now().getTime() - since.getTime()) / 1000) : 0;
    log.info(
      { webhookEndpointId: endpoint.id, attempts },
      `webhook ${endpoint.id} (${hostOf(endpoint.url)}): delivering again after ${attempts} failed ` +
        `attempt(s) over ${seconds} s`,
    );
  };

  const start = (endpoint: ClaimedEndpoint) => {
    const wakesBefore = wakes;
    const task = (async () => {
      let end: RunEnd | 'failed';
      try {
        end = await run(endpoint);
      } catch (error) {
        // Postgres failed mid-run. The lease is kept until it expires (LEASE_MS): a pause before
        // anyone tries this endpoint again, rather than a retry every poll while Postgres is down.
        // The endpoint resumes from its recorded cursor.
        log.warn(
          { err: error, webhookEndpointId: endpoint.id },
          `webhook ${endpoint.id}: delivery run failed`,
        );
        end = 'failed';
      }
      if (end === 'caught-up' || end === 'stopped' || end === 'lost') {
        await releaseLeases(db, owner, [endpoint.id]).catch(() => {});
      }
      const wasFull = running.size >= maxActive;
      // Endpoints of this account this dispatcher ran, this one included.
      let ofAccount = 0;
      for (const other of running.values()) if (other.accountId === endpoint.accountId) ofAccount++;
      running.delete(endpoint.id);
      // The account was at its share: its other endpoints may be due, held back by it.
      const accountWasFull = ofAccount >= MAX_LEASED_PER_ACCOUNT;
      // Taken back by the API, given back with more to deliver, woken while busy with it (it may
      // have news), or a slot came free with endpoints waiting: look again now.
      if (end === 'lost' || end === 'yielded' || wakes !== wakesBefore || wasFull || accountWasFull) wake();
    })();
    running.set(endpoint.id, { accountId: endpoint.accountId, task });
  };

  const renewal = setInterval(() => {
    void renewLeases(db, owner, [...running.keys()]).catch((error: unknown) =>
      log.warn({ err: error }, 'webhook dispatcher: renewing leases failed'),
    );
  }, RENEW_MS);
  renewal.unref();

  const loop = (async () => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      const wakesBefore = wakes;
      let pauseMs = pollMs;
      try {
        const free = maxActive - running.size;
        const claimed = await claimDueEndpoints(db, { owner, limit: free, running: [...running.keys()] });
        for (const endpoint of claimed) start(endpoint);
        if (failures > 0) log.info(`webhook dispatcher: working again after ${failures} failed attempt(s)`);
        failures = 0;
      } catch (error) {
        failures++;
        if (failures === 1)
          log.warn({ err: error }, 'webhook dispatcher: claiming endpoints failed; retrying');
        pauseMs = Math.min(MAX_BACKOFF_MS, pollMs * 2 ** failures);
      }
      // Woken meanwhile: look again soon, but not at once (and not woken out of this short
      // pause): under load the sequencer and the endpoints finishing wake it hundreds of times a
      // second, and one look serves them all.
      const woken = wakes !== wakesBefore && failures === 0;
      if (woken) pauseMs = CLAIM_GAP_MS;
      const pause = new AbortController();
      kick = woken ? undefined : () => pause.abort();
      const stop = () => pause.abort();
      stopping.signal.addEventListener('abort', stop, { once: true });
      await sleep(pauseMs, undefined, { signal: pause.signal }).catch(() => {});
      stopping.signal.removeEventListener('abort', stop);
      kick = undefined;
    }
  })();

  return {
    wake,
    counts: () => ({ ...counts }),
    stop: async () => {
      stopping.abort();
      await loop;
      await Promise.allSettled([...running.values()].map((entry) => entry.task));
      clearInterval(renewal);
      sender.close();
    },
  };
}

/** Runs at most `count` of the calls given at once; the others wait their turn, first come first served. */
function slots(count: number): <T>(run: () => Promise<T>) => Promise<T> {
  let free = count;
  const waiting: Array<() => void> = [];
  return async (run) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await run();
    } finally {
      // The slot passes straight to the next in line, or back to the pool.
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid URL';
  }
}
