import type { Logger } from 'pino';
import type { LiveEvents } from '../../adapters/redis/live-events.js';
import { readEvents, sequenceStagedEvents } from '../../adapters/postgres/event-log.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import { AppError } from '../../domain/errors.js';
import { parsePageLimit } from '../../domain/pagination/page-limit.js';
import { EVENT_PAGE_DEFAULT, EVENT_PAGE_MAX, parseEventCursor } from '../../domain/events/event-cursor.js';
import type { AccountEvent } from '../../domain/events/event-types.js';
import type { Metrics } from '../../observability/metrics.js';

/*
 * The account event log: what happened to an account's money, posts and follows, in the order
 * it was numbered, kept 30 days and more. Written by the changes themselves (staged in their own
 * transactions), numbered by the worker role's sequencer, read by pages, a resumable stream and
 * the webhook dispatcher. Pub/sub only wakes readers early; every reader re-reads the log from
 * its own cursor, so a lost wake (Redis restarting) delays an event, never loses it.
 */

export interface EventLogDeps {
  db: Db;
  liveEvents: LiveEvents;
  logger: Logger;
}

/** Staging rows numbered per sequencer turn: one turn's statement stays small. */
export const SEQUENCE_BATCH = 2_000;

const wakeTopic = (accountId: string) => `account-events:${accountId}`;

/**
 * One sequencer turn: numbers what committed since the last, tells this process (`onSequenced`:
 * the webhook dispatcher) and every API process (a pub/sub wake per account with new events).
 * Answers how many it numbered; a full batch (SEQUENCE_BATCH) means more may wait. `lookFirst`
 * false skips the cheap look for staged events (right after a turn that found some, when writes
 * are flowing and the look would cost a round trip that finds them anyway).
 */
export async function sequenceEvents(
  deps: EventLogDeps,
  onSequenced: (accounts: readonly string[]) => void,
  options: { lookFirst?: boolean } = {},
): Promise<number> {
  const { moved, accounts } = await sequenceStagedEvents(deps.db, SEQUENCE_BATCH, options);
  if (accounts.length > 0) {
    onSequenced(accounts);
    const woken = await Promise.allSettled(accounts.map((id) => deps.liveEvents.publish(wakeTopic(id), {})));
    const failed = woken.filter((result) => result.status === 'rejected').length;
    if (failed > 0)
      deps.logger.warn(`event sequencer: ${failed} wake(s) not published; readers catch up on their poll`);
  }
  return moved;
}

export interface EventPage {
  events: AccountEvent[];
  hasMore: boolean;
  /** The cursor to ask from next: the last event's sequence, or `after` itself on an empty page. */
  nextCursor: string;
}

/**
 * A page of the account's log, oldest first: REST GET /events and GraphQL `events`. `after` is a
 * cursor (a sequence; none: from the start of the kept log), `limit` 1 to 100 (default 50).
 */
export async function eventPage(
  deps: Pick<EventLogDeps, 'db'>,
  accountId: string,
  input: { after?: string | null | undefined; limit?: unknown },
): Promise<EventPage> {
  const options = { after: eventCursor(input.after ?? undefined), limit: pageLimit(input.limit) };
  const rows = await readEvents(deps.db, accountId, { after: options.after, limit: options.limit + 1 });
  const events = rows.slice(0, options.limit);
  const last = events.at(-1);
  return {
    events,
    hasMore: rows.length > options.limit,
    nextCursor: last ? String(last.sequence) : String(options.after),
  };
}

/** A cursor from a client, or invalid_request saying what one looks like. */
export function eventCursor(text: string | undefined): bigint {
  const after = parseEventCursor(text);
  if (after === undefined) {
    throw new AppError(
      'invalid_request',
      'after: expected an event cursor (the sequence of an event, as digits)',
    );
  }
  return after;
}

function pageLimit(value: unknown): number {
  // An empty `limit=` is no limit given (the events page is new: nothing relied on a 400 for it).
  return parsePageLimit(value === '' ? undefined : value, {
    max: EVENT_PAGE_MAX,
    fallback: EVENT_PAGE_DEFAULT,
  });
}

/** A follower with no wake re-reads the log this often (a wake lost with a Redis restart). */
const FOLLOW_POLL_MS = 5_000;
const FOLLOW_BATCH = 100;

/**
 * Every event of the account after `after`, then each new one as it is numbered, until `signal`
 * aborts: the resumable stream behind SSE and the GraphQL `events` subscription. It subscribes
 * before its first read, so an event numbered between the two is read, not missed. Counted in
 * `ledgerfeed_event_stream_followers` from its first `next()` to its end (a generator never
 * started runs nothing and is not counted). A signal already aborted reads nothing.
 */
export async function* followEvents(
  deps: Pick<EventLogDeps, 'db' | 'liveEvents'> & { metrics: Pick<Metrics, 'eventStreamFollowers'> },
  accountId: string,
  after: bigint,
  signal: AbortSignal,
): AsyncGenerator<AccountEvent> {
  if (signal.aborted) return;
  deps.metrics.eventStreamFollowers.inc();
  try {
    const wakes = deps.liveEvents.subscribe(wakeTopic(accountId));
    const onAbort = () => void wakes.return?.();
    signal.addEventListener('abort', onAbort, { once: true });
    const nextWake = wakeWaiter(wakes);
    let cursor = after;
    try {
      await wakes.ready;
      while (!signal.aborted) {
        const events = await readEvents(deps.db, accountId, { after: cursor, limit: FOLLOW_BATCH });
        for (const event of events) {
          if (signal.aborted) return;
          cursor = BigInt(event.sequence);
          yield event;
        }
        if (events.length === FOLLOW_BATCH) continue;
        await nextWake(FOLLOW_POLL_MS);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      await wakes.return?.();
    }
  } finally {
    deps.metrics.eventStreamFollowers.dec();
  }
}

/**
 * Waits for the next wake (several pending count as one) or the timeout, whichever is first. One
 * `next()` stays pending across calls: a fresh one per call would leave the timed-out one behind to
 * swallow the next wake.
 */
function wakeWaiter(wakes: AsyncIterator<unknown>): (timeoutMs: number) => Promise<void> {
  let pending: Promise<unknown> | undefined;
  return async (timeoutMs) => {
    pending ??= wakes.next().finally(() => {
      pending = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      pending,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  };
}
