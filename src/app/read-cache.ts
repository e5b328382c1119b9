import type { ChangeSignals, ChangeTopic } from './change-signals.js';

/**
 * A small in-process cache of computed reads, emptied by change signals (change-signals.ts) and
 * bounded in age, so a hot read (the feed's first page under many clients, a key checked on every
 * request) costs one computation per change instead of one per request.
 *
 * Concurrent misses of one key share one computation, which is entered in the map when it starts. A
 * change empties the map, computations still running included: a request that arrives after a
 * change never shares a computation that began before it. Only successful computations are kept.
 */
export interface ReadCache<T> {
  get(key: string, compute: () => Promise<T>): Promise<T>;
  /**
   * For reads computed elsewhere (a GraphQL execution writes its own response): `version()` before
   * computing, `remember(key, value, version)` after. A value whose computation saw a change is
   * dropped, as the map emptying drops it for get().
   */
  version(): number;
  remember(key: string, value: T, version: number): void;
  /** The fresh value of `key`, if one is kept. */
  peek(key: string): Promise<T> | undefined;
  /** Forgets `key` (e.g. a revoked API key) without waiting for a change signal. */
  delete(key: string): void;
  readonly size: number;
}

interface Entry<T> {
  value: Promise<T>;
  expiresAt: number;
}

export function createReadCache<T>(
  signals: Pick<ChangeSignals, 'onChange'>,
  options: { topics: ChangeTopic[]; ttlMs: number; maxEntries: number },
): ReadCache<T> {
  const entries = new Map<string, Entry<T>>();
  let changes = 0;
  for (const topic of options.topics) {
    signals.onChange(topic, () => {
      changes += 1;
      entries.clear();
    });
  }
  const fresh = (key: string, now: number): Entry<T> | undefined => {
    const hit = entries.get(key);
    return hit && hit.expiresAt > now ? hit : undefined;
  };
  const store = (key: string, entry: Entry<T>): void => {
    if (entries.size >= options.maxEntries && !entries.has(key)) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
    entries.set(key, entry);
  };

  return {
    get: (key, compute) => {
      if (options.ttlMs <= 0) return compute();
      const now = Date.now();
      const hit = fresh(key, now);
      if (hit) return hit.value;
      const entry: Entry<T> = { value: compute(), expiresAt: now + options.ttlMs };
      store(key, entry);
      entry.value.catch(() => {
        if (entries.get(key) === entry) entries.delete(key);
      });
      return entry.value;
    },
    version: () => changes,
    remember: (key, value, version) => {
      if (options.ttlMs > 0 && version === changes) {
        store(key, { value: Promise.resolve(value), expiresAt: Date.now() + options.ttlMs });
      }
    },
    peek: (key) => fresh(key, Date.now())?.value,
    delete: (key) => entries.delete(key),
    get size() {
      return entries.size;
    },
  };
}
