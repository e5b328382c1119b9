import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { LiveEvents } from '../adapters/redis/live-events.js';
import { createRecentWrites, type RecentWrites } from './recent-writes.js';

/**
 * "What this names has changed", told to the read caches of every process by the code that made
 * the change, right after it committed, through commit-notifier.ts (whose table says which write
 * names which keys; test/layering.test.ts holds that no other code calls changed()). A cached read records the keys it read (read-cache.ts) and
 * only the entries that read a changed key go stale, so a change costs in proportion to what it
 * touched:
 *
 * - `post:<id>`: that post's content or counts (a like, unlike, repost, reply or quote counted on
 *   it) or whether it is shown at all (its payment failed on chain);
 * - `latest`: the first page of the latest feed (a post shown; one hidden is `post:<id>`);
 * - `trending`: the trending snapshot was rebuilt;
 * - `account:<id>`: what is shown of an account beside its posts and on its profile (handle,
 *   display name, avatar, bio);
 * - `account-counts:<id>`: its post, follower and following counts and follow lists (a post or a
 *   follow moves them; pages that only show the account beside its posts do not read them);
 * - `timeline:<id>`: the account's timeline gained or lost an entry (its post or repost);
 * - `handle:<handle>`: an account now answers to the handle (sign-up, rename);
 * - `identity`: API keys and the accounts behind them (what authentication resolves);
 * - `*`: everything (a burst that named too many keys for one message, or an old publisher).
 */
export type ChangeKey =
  | 'latest'
  | 'trending'
  | 'identity'
  | typeof EVERYTHING
  | `post:${string}`
  | `account:${string}`
  | `account-counts:${string}`
  | `timeline:${string}`
  | `handle:${string}`;

export const EVERYTHING = '*';
export const postKey = (id: string): ChangeKey => `post:${id}`;
export const accountKey = (id: string): ChangeKey => `account:${id}`;
export const accountCountsKey = (id: string): ChangeKey => `account-counts:${id}`;
export const timelineKey = (accountId: string): ChangeKey => `timeline:${accountId}`;
export const handleKey = (handle: string): ChangeKey => `handle:${handle}`;

/**
 * This process's own listeners hear a change synchronously, before the write that caused it
 * answers. Other processes hear it through Redis pub/sub (at most once, usually within a
 * millisecond plus PUBLISH_EVERY_MS); the caches' time-to-live bounds how stale a read can be if a
 * message is lost.
 */
export interface ChangeSignals {
  changed(...keys: ChangeKey[]): void;
  /** Calls `listener` with the keys of every change, here or elsewhere; returns the unsubscribe. */
  onChange(listener: (keys: readonly string[]) => void): () => void;
  /** Who wrote here lately, for read-your-writes (recent-writes.ts). */
  writes: RecentWrites;
  close(): Promise<void>;
}

interface ChangeMessage {
  keys: string[];
  origin: string;
}

const CHANNEL = 'read-cache-changes';
/** At most one message this often: other processes' caches hear of a change that much later. */
const PUBLISH_EVERY_MS = 10;
/**
 * Keys one message may name (a post id key is ~41 bytes, so ~10 KB). A burst naming more (a worker
 * failing hundreds of payments at once) is sent as `*`: every other process refreshes everything
 * once, instead of every process parsing an unbounded message.
 */
export const MAX_KEYS_PER_MESSAGE = 256;

/**
 * Tells every process's read caches of a change made outside any of them (the CLI revoking a key):
 * a one-off publish, for a process that holds no ChangeSignals of its own.
 */
export function publishChange(liveEvents: Pick<LiveEvents, 'publish'>, keys: ChangeKey[]): Promise<void> {
  return liveEvents.publish(CHANNEL, messageOf(new Set(keys), 'cli'));
}

function messageOf(keys: ReadonlySet<string>, origin: string): ChangeMessage {
  return { keys: keys.size > MAX_KEYS_PER_MESSAGE ? [EVERYTHING] : [...keys], origin };
}

/**
 * The keys a message from another process names. Anything unexpected (an older process's
 * `{ topic }` message, a malformed one) counts as everything: a cache refreshed for nothing costs a
 * computation, a change missed would show stale data until the time-to-live.
 */
function keysOf(message: unknown): string[] {
  const keys = (message as Partial<ChangeMessage> | null)?.keys;
  if (
    Array.isArray(keys) &&
    keys.length <= MAX_KEYS_PER_MESSAGE &&
    keys.every((key) => typeof key === 'string' && key.length <= 200)
  ) {
    return keys;
  }
  if ((message as { topic?: unknown } | null)?.topic === 'identity') return ['identity'];
  return [EVERYTHING];
}

export function createChangeSignals(liveEvents: LiveEvents, logger: Logger): ChangeSignals {
  const origin = randomUUID();
  const listeners = new Set<(keys: readonly string[]) => void>();
  const notify = (keys: readonly string[]) => {
    for (const listener of listeners) listener(keys);
  };

  // Changes made within PUBLISH_EVERY_MS of each other (a burst of paid posts, a worker settling
  // 500 payments) go out as one message: other processes hear of them that much later.
  const unpublished = new Set<string>();
  const flush = () => {
    liveEvents
      .publish(CHANNEL, messageOf(unpublished, origin))
      .catch((err: unknown) => logger.warn({ err }, 'read-cache change not published'));
    unpublished.clear();
  };

  const remote = liveEvents.subscribe<unknown>(CHANNEL);
  void (async () => {
    for await (const message of remote) {
      if ((message as Partial<ChangeMessage> | null)?.origin !== origin) notify(keysOf(message));
    }
  })();

  return {
    changed: (...keys) => {
      if (keys.length === 0) return;
      notify(keys);
      if (unpublished.size === 0) setTimeout(flush, PUBLISH_EVERY_MS);
      // Past the bound the message is `*` anyway: stop collecting.
      for (const key of keys) if (unpublished.size <= MAX_KEYS_PER_MESSAGE) unpublished.add(key);
    },
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    writes: createRecentWrites(),
    close: async () => {
      await remote.return();
    },
  };
}
