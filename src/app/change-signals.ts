import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { LiveEvents } from '../adapters/redis/live-events.js';

/**
 * "Something a cached read depends on has changed", told to the read caches of every process.
 *
 * - `content`: posts, engagement counts, profiles shown beside posts, payment outcomes, the
 *   trending snapshot: what the feed and post reads show.
 * - `identity`: API keys and the accounts behind them: what authentication resolves.
 *
 * This process's own listeners hear a change synchronously, before the write that caused it
 * answers, so a client always reads its own writes. Other processes hear it through Redis pub/sub
 * (at most once, usually within a millisecond); the caches' short time-to-live bounds how stale a
 * read can be if a message is lost.
 */
export type ChangeTopic = 'content' | 'identity';

export interface ChangeSignals {
  changed(topic: ChangeTopic): void;
  /** Calls `listener` on every change of `topic`, here or elsewhere; returns the unsubscribe. */
  onChange(topic: ChangeTopic, listener: () => void): () => void;
  close(): Promise<void>;
}

interface ChangeMessage {
  topic: ChangeTopic;
  origin: string;
}

const CHANNEL = 'read-cache-changes';
/** At most one message per topic this often: other processes' caches are that much staler. */
const PUBLISH_EVERY_MS = 10;

/**
 * Tells every process's read caches of a change made outside any of them (the CLI revoking a key):
 * a one-off publish, for a process that holds no ChangeSignals of its own.
 */
export function publishChange(liveEvents: Pick<LiveEvents, 'publish'>, topic: ChangeTopic): Promise<void> {
  return liveEvents.publish(CHANNEL, { topic, origin: 'cli' } satisfies ChangeMessage);
}

export function createChangeSignals(liveEvents: LiveEvents, logger: Logger): ChangeSignals {
  const origin = randomUUID();
  const listeners: Record<ChangeTopic, Set<() => void>> = { content: new Set(), identity: new Set() };
  const notify = (topic: ChangeTopic) => {
    for (const listener of listeners[topic]) listener();
  };

  // Changes made within PUBLISH_EVERY_MS of each other (a burst of paid posts, a worker settling
  // 500 payments) go out as one message per topic: other processes hear of them that much later.
  const unpublished = new Set<ChangeTopic>();
  const flush = () => {
    for (const topic of unpublished) {
      liveEvents
        .publish(CHANNEL, { topic, origin } satisfies ChangeMessage)
        .catch((err: unknown) => logger.warn({ err }, 'read-cache change not published'));
    }
    unpublished.clear();
  };

  const remote = liveEvents.subscribe<ChangeMessage>(CHANNEL);
  void (async () => {
    for await (const message of remote) {
      if (message.origin !== origin && message.topic in listeners) notify(message.topic);
    }
  })();

  return {
    changed: (topic) => {
      notify(topic);
      if (unpublished.size === 0) setTimeout(flush, PUBLISH_EVERY_MS);
      unpublished.add(topic);
    },
    onChange: (topic, listener) => {
      listeners[topic].add(listener);
      return () => listeners[topic].delete(listener);
    },
    close: async () => {
      await remote.return();
    },
  };
}
