import { EVERYTHING, type ChangeKey, type ChangeSignals } from './change-signals.js';

/**
 * A small in-process cache of computed reads (a feed page, a GraphQL answer, an API key row) that
 * knows what each entry read, so a change makes stale only the entries that read what it names.
 *
 * - **Dependencies.** A computation tells its tracker each key it read (`post:<id>` of every item
 *   of a page, `latest` for the first latest page, ...; change-signals.ts). A change of a key marks
 *   the entries that read it stale; a change that arrives while a computation runs makes its result
 *   stale from the moment it arrived (the computation may have read before it).
 * - **One computation per key.** Concurrent misses of a key share one computation, and a stale
 *   entry is refreshed by one computation at a time however many readers ask and however many
 *   changes keep arriving: under a steady write rate a hot key is recomputed back to back, never
 *   once per reader.
 * - **Bounded staleness.** A stale entry is still answered for `staleMs` after the first change it
 *   missed while its refresh runs; past that, readers wait for (join) the refresh. An entry also
 *   expires `ttlMs` after it was computed (the bound if a pub/sub message is lost), and is then
 *   answered for `expiredMs` more while it is refreshed the same way.
 * - **Read-your-writes.** An entry is never given to a viewer whose last write here (recent-
 *   writes.ts) is newer than the entry's computation start, stale or not: that viewer joins, or
 *   starts, a computation that began after its write.
 *
 * Only successful computations are kept; a failed one is retried by the next reader.
 */
export interface ReadCache<T> {
  /**
   * The value of `key`: cached, shared with a computation in flight, or computed by `compute`.
   * `viewer` is the account reading (for read-your-writes); none for reads no account writes to.
   */
  get(key: string, compute: (track: DependencyTracker) => Promise<T>, viewer?: string): Promise<T>;
  /**
   * The value `get` would answer at once without waiting (fresh, or stale within its bound, and
   * computed after `viewer`'s last write); undefined when `get` would compute or wait. With
   * `refresh` (a `background` cache) it starts the refresh `get` would start; otherwise a stale
   * entry whose refresh is due gives undefined, so the caller's `get` runs it. For callers that
   * answer hits on a path of their own and leave everything else to the full request path
   * (api/cached-reads/).
   */
  answerNow(
    key: string,
    viewer: string | undefined,
    refresh?: (track: DependencyTracker) => Promise<T>,
  ): T | undefined;
  /** An entry for `key` is kept (fresh or not): the key was computed before. */
  has(key: string): boolean;
  /** Forgets `key` (e.g. a revoked API key) without waiting for a change signal. */
  delete(key: string): void;
  readonly size: number;
}

export interface DependencyTracker {
  /** The computation read what `key` names: a change of it makes the result stale. */
  reads(key: ChangeKey): void;
  /** The result is not to be kept (an error answer, a stream); readers waiting on it still get it. */
  keepNot(): void;
}

export interface ReadCacheOptions {
  /** How long a computed value is fresh without a change signal; 0 turns the cache off. */
  ttlMs: number;
  maxEntries: number;
  /**
   * How long after the first change it missed (or its expiry) an entry is still answered while one
   * refresh runs; 0: a stale entry is never answered (API keys: a revoked key must stop at once).
   */
  staleMs: number;
  /**
   * As `staleMs`, for an entry that no change touched but that expired (`ttlMs`): a key row that
   * no revocation made stale may be answered while it is looked up again, so that the readers of a
   * key never all wait for its lookup once a TTL.
   */
  expiredMs: number;
  /**
   * Who runs the refresh of a stale entry: `background` (nobody waits for it; the reader that found
   * it stale is answered the stale value too), or `caller` (that reader computes and waits, as on
   * a miss; the others are answered the stale value meanwhile). `caller` is for computations
   * bound to the request that runs them (a GraphQL execution spends its caller's rate limit).
   */
  refresh: 'background' | 'caller';
  /**
   * The least time between the starts of two computations of one key while a stale entry may be
   * answered (0 or unset: none). Under a steady write rate a hot entry is stale again as soon as
   * it is stored; without a floor it is recomputed back to back, as many times a second as
   * changes arrive (20 posts/s and 40 likes/s on the first latest page's posts made ~60 refreshes
   * a second of one page). With it the changes of that time share one refresh. It must stay well
   * under `staleMs`, so that readers still almost never wait.
   */
  refreshEveryMs?: number;
}

/**
 * How long a stale feed page or GraphQL answer may still be answered to viewers who did not write
 * since it was computed, while its one refresh runs. Long enough that a refresh under load (a page
 * is one statement, a few ms; tens of ms with 50 clients on 2 cores) finishes well inside it, so
 * readers almost never wait for one; short enough to be below what anyone notices of someone
 * else's post or like (feed clients poll every few seconds). A writer never gets a stale entry.
 */
export const READ_STALE_MS = 500;

/**
 * The least time between two refreshes of one stale feed page or GraphQL answer: the changes of
 * that time share one computation (at most 10 a second per hot key, however fast writes arrive),
 * and another viewer sees a change at most this much later than without it. A viewer who wrote
 * is never answered a stale entry, so this never delays reading one's own writes.
 */
export const READ_REFRESH_EVERY_MS = 100;

/** A tracker that records nothing: the cache is off. */
const UNTRACKED: DependencyTracker = { reads: () => {}, keepNot: () => {} };

/** Keys a computation may miss one by one before it counts as having missed everything. */
const MAX_MISSED_KEYS = 1_000;

interface Entry<T> {
  value: T;
  /** The write clock (recent-writes.ts) when its computation started. */
  startedAt: number;
  /** Date.now() when its computation started. */
  computedAt: number;
  deps: ReadonlySet<string>;
  /** Date.now() after which it is stale without any change. */
  expiresAt: number;
  /** Date.now() of the first change it missed; undefined while none. */
  staleSince: number | undefined;
}

interface Flight<T> {
  promise: Promise<T>;
  startedAt: number;
  /** Date.now() when it started. */
  startedAtMs: number;
  /** Keys changed while it ran, with when each first changed. */
  missed: Map<string, number>;
  /** When everything changed while it ran (`*`, or too many keys to list). */
  missedAll: number | undefined;
}

export function createReadCache<T>(
  signals: Pick<ChangeSignals, 'onChange' | 'writes'>,
  options: ReadCacheOptions,
): ReadCache<T> {
  const refreshEveryMs = options.refreshEveryMs ?? 0;
  const entries = new Map<string, Entry<T>>();
  /** Change key -> cache keys of the entries that read it. */
  const dependents = new Map<string, Set<string>>();
  /** The newest computation of each cache key still running. */
  const flights = new Map<string, Flight<T>>();
  /** Every computation still running, including ones a newer computation of their key overtook. */
  const running = new Set<Flight<T>>();

  if (options.ttlMs > 0) {
    signals.onChange((keys) => {
      const now = Date.now();
      const everything = keys.includes(EVERYTHING);
      if (everything) {
        for (const entry of entries.values()) entry.staleSince ??= now;
      } else {
        for (const key of keys) {
          for (const cacheKey of dependents.get(key) ?? []) {
            const entry = entries.get(cacheKey);
            if (entry) entry.staleSince ??= now;
          }
        }
      }
      for (const flight of running) {
        if (flight.missedAll !== undefined) continue;
        if (everything || flight.missed.size + keys.length > MAX_MISSED_KEYS) flight.missedAll = now;
        else for (const key of keys) if (!flight.missed.has(key)) flight.missed.set(key, now);
      }
    });
  }

  const forget = (key: string): void => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    for (const dep of entry.deps) {
      const set = dependents.get(dep);
      set?.delete(key);
      if (set?.size === 0) dependents.delete(dep);
    }
  };

  const store = (key: string, flight: Flight<T>, value: T, deps: ReadonlySet<string>): void => {
    const current = entries.get(key);
    // A computation that started earlier finished later: the newer result stays.
    if (current && current.startedAt > flight.startedAt) return;
    let staleSince = flight.missedAll;
    for (const dep of deps) {
      const at = flight.missed.get(dep);
      if (at !== undefined && (staleSince === undefined || at < staleSince)) staleSince = at;
    }
    forget(key);
    if (entries.size >= options.maxEntries) {
      // Maps iterate in insertion order, and a refreshed entry is inserted again: the first key is
      // the entry computed longest ago.
      const oldest = entries.keys().next();
      if (!oldest.done) forget(oldest.value);
    }
    entries.set(key, {
      value,
      startedAt: flight.startedAt,
      computedAt: flight.startedAtMs,
      deps,
      expiresAt: Date.now() + options.ttlMs,
      staleSince,
    });
    for (const dep of deps) {
      let set = dependents.get(dep);
      if (!set) {
        set = new Set();
        dependents.set(dep, set);
      }
      set.add(key);
    }
  };

  const start = (key: string, compute: (track: DependencyTracker) => Promise<T>): Flight<T> => {
    const deps = new Set<string>();
    let keep = true;
    const tracker: DependencyTracker = {
      reads: (dep) => void deps.add(dep),
      keepNot: () => void (keep = false),
    };
    const flight: Flight<T> = {
      promise: undefined as unknown as Promise<T>,
      startedAt: signals.writes.now(),
      startedAtMs: Date.now(),
      missed: new Map(),
      missedAll: undefined,
    };
    const settle = () => {
      running.delete(flight);
      if (flights.get(key) === flight) flights.delete(key);
    };
    running.add(flight);
    flights.set(key, flight);
    flight.promise = (async () => compute(tracker))().then(
      (value) => {
        settle();
        if (keep) store(key, flight, value, deps);
        return value;
      },
      (error: unknown) => {
        settle();
        throw error;
      },
    );
    return flight;
  };

  /**
   * What `get` answers without waiting, if anything (see ReadCache.answerNow). `compute` starts a
   * refresh that is due; without it a due refresh gives undefined.
   */
  const servable = (
    key: string,
    compute: ((track: DependencyTracker) => Promise<T>) | undefined,
    viewer: string | undefined,
  ): { value: T } | { refresh: Promise<T> } | undefined => {
    const entry = entries.get(key);
    if (!entry || entry.startedAt < signals.writes.since(viewer)) return undefined;
    const now = Date.now();
    const { staleSince } = entry;
    if (staleSince === undefined && now < entry.expiresAt) return { value: entry.value };
    const answerable =
      staleSince === undefined
        ? now - entry.expiresAt < options.expiredMs
        : now - staleSince < options.staleMs;
    if (!answerable) return undefined;
    // One refresh at a time, and not before the floor: the changes meanwhile wait for it.
    if (flights.has(key) || now - entry.computedAt < refreshEveryMs) return { value: entry.value };
    if (!compute) return undefined;
    const refresh = start(key, compute).promise;
    if (options.refresh === 'caller') return { refresh };
    refresh.catch(() => {}); // its readers (past the bound) see the error; nobody waits here
    return { value: entry.value };
  };

  return {
    get: (key, compute, viewer) => {
      if (options.ttlMs <= 0) return compute(UNTRACKED);
      const now = servable(key, compute, viewer);
      if (now) return 'value' in now ? Promise.resolve(now.value) : now.refresh;
      // Nothing this viewer may be given: the computation in flight if it began after the viewer's
      // last write, else a new one.
      const since = signals.writes.since(viewer);
      const flight = flights.get(key);
      if (flight && flight.startedAt >= since) return flight.promise;
      return start(key, compute).promise;
    },
    answerNow: (key, viewer, refresh) => {
      if (options.ttlMs <= 0) return undefined;
      const now = servable(key, options.refresh === 'background' ? refresh : undefined, viewer);
      return now && 'value' in now ? now.value : undefined;
    },
    has: (key) => entries.has(key),
    delete: forget,
    get size() {
      return entries.size;
    },
  };
}
