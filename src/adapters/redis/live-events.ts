import type { Redis } from 'ioredis';
import { createRedis } from './redis.js';
import { gatheredPublisher } from './gathered-publish.js';

/**
 * Live events (GraphQL subscriptions) over Redis pub/sub, so an event published by one API process
 * reaches subscribers on every process. Messages are JSON; channels are `${prefix}:live:${topic}`.
 * One dedicated subscriber connection per process (a subscribed ioredis connection can do nothing
 * else), opened on the first subscription and shared by all of them; each Redis channel is
 * subscribed while at least one local listener wants it.
 *
 * Delivery is at most once: an event published while a subscriber's connection is down is lost.
 * Subscribers should treat an event as "look again", not as the state itself.
 */
export interface LiveEvents {
  /**
   * Publishes to every process's subscribers of `topic`, gathered with the publishes of the next
   * few milliseconds into one pipeline (gathered-publish.ts). Resolves once Redis took the message.
   */
  publish(topic: string, payload: unknown): Promise<void>;
  /**
   * Events of `topic` from now on, until the iterator's `return()` (a `for await` that breaks, or
   * GraphQL ending the subscription) or close(). The Redis SUBSCRIBE has completed when the first
   * `next()` is called only if `ready` was awaited; use `ready` when the order matters.
   */
  subscribe<T = unknown>(topic: string): LiveSubscription<T>;
  close(): Promise<void>;
}

export interface LiveSubscription<T> extends AsyncIterableIterator<T> {
  /** Resolves when Redis confirmed the SUBSCRIBE: events published afterwards are delivered. */
  ready: Promise<void>;
  /** Ends the subscription at once (a pending next() answers done) and unsubscribes. */
  return(): Promise<IteratorReturnResult<undefined>>;
  throw(error: unknown): Promise<never>;
}

type Listener = (payload: unknown) => void;

/** Undelivered events a slow subscriber may hold before the oldest are dropped. */
const MAX_BUFFERED = 1_000;

export function createLiveEvents(options: {
  /** Redis URL of the dedicated subscriber connection. */
  url: string;
  /** REDIS_PREFIX of this deployment. */
  prefix: string;
  /** The client that publishes (any non-subscribed connection, e.g. the app's). */
  publisher: Redis;
  /** Called with a message that is not JSON, which is dropped. */
  onBadMessage?: (channel: string, error: unknown) => void;
}): LiveEvents {
  const channelOf = (topic: string) => `${options.prefix}:live:${topic}`;
  const gathered = gatheredPublisher(options.publisher);
  const listeners = new Map<string, Set<Listener>>();
  /** Pending SUBSCRIBE per channel, so a second local listener waits on the same one. */
  const subscribed = new Map<string, Promise<void>>();
  let subscriber: Redis | undefined;
  let closed = false;

  const connection = (): Redis => {
    if (subscriber) return subscriber;
    const redis = createRedis(options.url, 'client');
    redis.on('message', (channel: string, message: string) => {
      const set = listeners.get(channel);
      if (!set) return;
      let payload: unknown;
      try {
        payload = JSON.parse(message);
      } catch (error) {
        options.onBadMessage?.(channel, error);
        return;
      }
      for (const listener of set) listener(payload);
    });
    subscriber = redis;
    return redis;
  };

  const addListener = (channel: string, listener: Listener): Promise<void> => {
    let set = listeners.get(channel);
    if (!set) {
      set = new Set();
      listeners.set(channel, set);
    }
    set.add(listener);
    let ready = subscribed.get(channel);
    if (!ready) {
      ready = connection()
        .subscribe(channel)
        .then(() => undefined);
      // A failed SUBSCRIBE is retried by the next subscription to the channel.
      ready.catch(() => subscribed.delete(channel));
      subscribed.set(channel, ready);
    }
    return ready;
  };

  const removeListener = (channel: string, listener: Listener): void => {
    const set = listeners.get(channel);
    if (!set) return;
    set.delete(listener);
    if (set.size > 0) return;
    listeners.delete(channel);
    subscribed.delete(channel);
    if (subscriber && !closed) void subscriber.unsubscribe(channel).catch(() => {});
  };

  const ends = new Set<() => void>();

  return {
    publish: (topic, payload) => gathered.publish(channelOf(topic), JSON.stringify(payload)),

    subscribe: <T>(topic: string): LiveSubscription<T> => {
      const channel = channelOf(topic);
      const buffer: T[] = [];
      let waiting: ((result: IteratorResult<T>) => void) | undefined;
      let done = closed;

      const listener: Listener = (payload) => {
        if (done) return;
        if (waiting) {
          const resolve = waiting;
          waiting = undefined;
          resolve({ value: payload as T, done: false });
          return;
        }
        buffer.push(payload as T);
        if (buffer.length > MAX_BUFFERED) buffer.shift();
      };

      const end = (): void => {
        if (done) return;
        done = true;
        ends.delete(end);
        removeListener(channel, listener);
        buffer.length = 0;
        if (waiting) {
          const resolve = waiting;
          waiting = undefined;
          resolve({ value: undefined, done: true });
        }
      };

      const ready = done ? Promise.resolve() : addListener(channel, listener);
      if (!done) ends.add(end);
      // An unobserved failure must not crash the process; next() reports it.
      ready.catch(() => {});

      const iterator: LiveSubscription<T> = {
        ready,
        next: async () => {
          if (done) return { value: undefined, done: true };
          await ready;
          const buffered = buffer.shift();
          if (buffered !== undefined) return { value: buffered, done: false };
          if (done) return { value: undefined, done: true };
          return new Promise<IteratorResult<T>>((resolve) => {
            waiting = resolve;
          });
        },
        return: () => {
          end();
          return Promise.resolve({ value: undefined, done: true as const });
        },
        throw: (error: unknown) => {
          end();
          return Promise.reject(error instanceof Error ? error : new Error(String(error)));
        },
        [Symbol.asyncIterator]() {
          return iterator;
        },
      };
      return iterator;
    },

    close: async () => {
      if (closed) return;
      closed = true;
      await gathered.flush().catch(() => {}); // each publisher heard of its own failure
      for (const end of [...ends]) end();
      if (subscriber) await subscriber.quit().catch(() => subscriber?.disconnect());
    },
  };
}
