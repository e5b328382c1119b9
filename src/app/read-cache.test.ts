import { describe, expect, test } from 'vitest';
import type { ChangeKey, ChangeSignals } from './change-signals.js';
import { createReadCache, type DependencyTracker, type ReadCacheOptions } from './read-cache.js';
import { createRecentWrites } from './recent-writes.js';

/** The in-process half of ChangeSignals: listeners called synchronously, a real write log. */
function localSignals(): Pick<ChangeSignals, 'onChange' | 'changed' | 'writes'> {
  const listeners = new Set<(keys: readonly string[]) => void>();
  return {
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    changed: (...keys: ChangeKey[]) => listeners.forEach((listener) => listener(keys)),
    writes: createRecentWrites(),
  };
}

const deferred = <T>() => {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Lets settled promises' callbacks run (a background refresh that resolved at once). */
const settle = () => sleep(0);

const options: ReadCacheOptions = {
  ttlMs: 60_000,
  maxEntries: 100,
  staleMs: 60_000,
  expiredMs: 60_000,
  refresh: 'background',
};

/** A computation that reads `deps` and answers the next number of its own counter. */
function counter(...deps: ChangeKey[]) {
  let computed = 0;
  const compute = (track: DependencyTracker) => {
    for (const dep of deps) track.reads(dep);
    return Promise.resolve(++computed);
  };
  return {
    compute,
    get computed() {
      return computed;
    },
  };
}

describe('read cache', () => {
  test('concurrent misses share one computation; a hit computes nothing', async () => {
    const cache = createReadCache<number>(localSignals(), options);
    const page = counter('latest');
    expect(await Promise.all([cache.get('a', page.compute), cache.get('a', page.compute)])).toEqual([1, 1]);
    expect(await cache.get('a', page.compute)).toBe(1);
    expect(page.computed).toBe(1);
  });

  test('a like on post X does not make a page without X stale; the page with X is refreshed once', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, options);
    const withX = counter('latest', 'post:x');
    const withoutX = counter('post:y', 'post:z');
    await cache.get('with-x', withX.compute);
    await cache.get('without-x', withoutX.compute);

    signals.changed('post:x');
    // Stale within the bound: answered at once with the old value, one refresh in the background.
    expect(await cache.get('with-x', withX.compute)).toBe(1);
    expect(await cache.get('with-x', withX.compute)).toBe(1);
    await settle();
    expect(await cache.get('with-x', withX.compute)).toBe(2);
    expect(withX.computed).toBe(2);
    expect(await cache.get('without-x', withoutX.compute)).toBe(1);
    expect(withoutX.computed).toBe(1);
  });

  test('a new post (`latest`) makes only the pages that read `latest` stale', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, { ...options, staleMs: 0 });
    const first = counter('latest', 'post:a');
    const second = counter('post:b');
    await cache.get('first', first.compute);
    await cache.get('second', second.compute);
    signals.changed('latest');
    expect(await cache.get('first', first.compute)).toBe(2);
    expect(await cache.get('second', second.compute)).toBe(1);
  });

  test('`*` makes every entry stale', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, { ...options, staleMs: 0 });
    const one = counter('post:a');
    const other = counter();
    await cache.get('one', one.compute);
    await cache.get('other', other.compute);
    signals.changed('*');
    expect(await cache.get('one', one.compute)).toBe(2);
    expect(await cache.get('other', other.compute)).toBe(2);
  });

  test('a change while a computation runs makes its result stale from that moment', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, { ...options, staleMs: 0 });
    const slow = deferred<string>();
    const before = cache.get('page', (track) => {
      track.reads('post:x');
      return slow.promise;
    });
    signals.changed('post:x'); // the computation may have read x before this
    slow.resolve('old');
    expect(await before).toBe('old');
    expect(await cache.get('page', () => Promise.resolve('new'))).toBe('new');
    // A change of something it did not read leaves the result fresh.
    const other = deferred<string>();
    const pending = cache.get('other', (track) => {
      track.reads('post:y');
      return other.promise;
    });
    signals.changed('post:x');
    other.resolve('kept');
    await pending;
    expect(await cache.get('other', () => Promise.resolve('recomputed'))).toBe('kept');
  });

  test('a stale entry is answered for at most staleMs; later readers wait for the one refresh', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, { ...options, staleMs: 40 });
    await cache.get('page', (track) => {
      track.reads('latest');
      return Promise.resolve('v1');
    });
    signals.changed('latest');
    const refresh = deferred<string>();
    let refreshes = 0;
    const compute = () => {
      refreshes += 1;
      return refresh.promise;
    };
    expect(await cache.get('page', compute)).toBe('v1'); // starts the refresh
    expect(await cache.get('page', compute)).toBe('v1');
    await sleep(50);
    const waiting = [cache.get('page', compute), cache.get('page', compute)];
    let answered = false;
    void Promise.all(waiting).then(() => (answered = true));
    await sleep(10);
    expect(answered).toBe(false); // past the bound: nobody gets v1 any more
    refresh.resolve('v2');
    expect(await Promise.all(waiting)).toEqual(['v2', 'v2']);
    expect(refreshes).toBe(1);
  });

  test('under a stream of changes, concurrent readers share few computations', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, { ...options, staleMs: 500 });
    let computations = 0;
    const compute = async (track: DependencyTracker) => {
      track.reads('latest');
      computations += 1;
      await sleep(5);
      return computations;
    };
    let reads = 0;
    const until = Date.now() + 300;
    const writer = (async () => {
      while (Date.now() < until) {
        signals.changed('latest');
        await sleep(2);
      }
    })();
    const reader = async () => {
      while (Date.now() < until) {
        await cache.get('latest-page', compute);
        reads += 1;
        await sleep(1);
      }
    };
    await Promise.all([writer, ...Array.from({ length: 50 }, reader)]);
    expect(reads).toBeGreaterThan(1_000);
    // Back to back, one at a time: at most one computation per 5 ms, never one per reader.
    expect(computations).toBeLessThanOrEqual(300 / 5 + 2);
    expect(computations * 20).toBeLessThan(reads);
  });

  test('refreshEveryMs: changes within the floor share one refresh; a writer still reads its write', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, { ...options, staleMs: 500, refreshEveryMs: 100 });
    let computations = 0;
    const compute = (track: DependencyTracker) => {
      track.reads('latest');
      return Promise.resolve(++computations);
    };
    const until = Date.now() + 450;
    let reads = 0;
    const writer = (async () => {
      while (Date.now() < until) {
        signals.changed('latest');
        await sleep(2);
      }
    })();
    const reader = async () => {
      while (Date.now() < until) {
        await cache.get('latest-page', compute);
        reads += 1;
        await sleep(1);
      }
    };
    await Promise.all([writer, ...Array.from({ length: 20 }, reader)]);
    // The entry was stale all the time; computations are instant, yet at most one per 100 ms.
    expect(reads).toBeGreaterThan(500);
    expect(computations).toBeGreaterThanOrEqual(4);
    expect(computations).toBeLessThanOrEqual(6);

    // A viewer who writes is not held by the floor: the entry is not answered to it.
    signals.writes.record('alice');
    signals.changed('latest');
    const before = computations;
    expect(await cache.get('latest-page', compute, 'alice')).toBe(before + 1);
  });

  test('a viewer who wrote after an entry began never gets it; others still do', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, options);
    let value = 'before';
    const compute = () => Promise.resolve(value);
    expect(await cache.get('page', compute, 'alice')).toBe('before');

    signals.writes.record('alice');
    value = 'after';
    // Nothing signalled (a write the page does not show, or one not told yet): the entry is fresh,
    // yet alice's write is newer than its computation.
    expect(await cache.get('page', compute, 'bob')).toBe('before');
    expect(await cache.get('page', compute, 'alice')).toBe('after');
    // Her own computation is newer than her write: kept, and now shared.
    expect(await cache.get('page', () => Promise.resolve('third'), 'alice')).toBe('after');
    expect(await cache.get('page', compute, 'bob')).toBe('after');
  });

  test('a writer joins a computation started after its write, not one started before it', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, options);
    const early = deferred<string>();
    const first = cache.get('page', () => early.promise, 'bob');
    signals.writes.record('alice');
    const late = deferred<string>();
    const alices = cache.get('page', () => late.promise, 'alice');
    const carols = cache.get('page', () => Promise.resolve('unused'), 'carol');
    early.resolve('early');
    late.resolve('late');
    expect(await first).toBe('early');
    expect(await alices).toBe('late');
    expect(await carols).toBe('late'); // joined the newest computation
    // The later computation's result stays even if the earlier one had finished after it.
    expect(await cache.get('page', () => Promise.resolve('unused'), 'alice')).toBe('late');
  });

  test('refresh "caller": the reader that finds the entry stale computes and waits; others do not', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, { ...options, refresh: 'caller' });
    await cache.get('answer', (track) => {
      track.reads('post:x');
      return Promise.resolve('v1');
    });
    signals.changed('post:x');
    const refresh = deferred<string>();
    const refresher = cache.get('answer', () => refresh.promise);
    expect(await cache.get('answer', () => Promise.resolve('unused'))).toBe('v1');
    refresh.resolve('v2');
    expect(await refresher).toBe('v2');
    expect(await cache.get('answer', () => Promise.resolve('unused'))).toBe('v2');
  });

  test('failures and results marked keepNot are not kept; entries expire; the oldest makes room', async () => {
    const cache = createReadCache<string>(localSignals(), {
      ...options,
      ttlMs: 20,
      staleMs: 0,
      expiredMs: 0,
      maxEntries: 2,
    });
    await expect(cache.get('x', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('x', () => Promise.resolve('up'))).toBe('up');
    await sleep(30);
    expect(await cache.get('x', () => Promise.resolve('later'))).toBe('later');
    await cache.get('y', (track) => {
      track.keepNot();
      return Promise.resolve('not kept');
    });
    expect(cache.size).toBe(1);
    await cache.get('y', () => Promise.resolve('y'));
    await cache.get('z', () => Promise.resolve('z'));
    expect(cache.size).toBe(2);
    expect(await cache.get('x', () => Promise.resolve('x again'))).toBe('x again');
  });

  test('a background refresh that fails keeps the stale entry within the bound', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, options);
    await cache.get('page', (track) => {
      track.reads('latest');
      return Promise.resolve('v1');
    });
    signals.changed('latest');
    expect(await cache.get('page', () => Promise.reject(new Error('down')))).toBe('v1');
    await settle();
    expect(await cache.get('page', () => Promise.resolve('v2'))).toBe('v1'); // refreshes again
    await settle();
    expect(await cache.get('page', () => Promise.resolve('unused'))).toBe('v2');
  });

  test('an expired entry is answered while it is refreshed; one a change made stale is not (staleMs 0)', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, { ...options, ttlMs: 20, staleMs: 0, expiredMs: 200 });
    /** A key row's lookup: it reads `identity`, as the API key cache's does. */
    const lookup = (value: string | Promise<string>) => (track: DependencyTracker) => {
      track.reads('identity');
      return Promise.resolve(value);
    };
    await cache.get('key', lookup('row'));
    await sleep(30);
    const again = deferred<string>();
    expect(await cache.get('key', lookup(again.promise))).toBe('row'); // expired: refreshed behind
    expect(await cache.get('key', lookup('unused'))).toBe('row');
    again.resolve('row again');
    await settle();
    expect(await cache.get('key', lookup('unused'))).toBe('row again');
    signals.changed('identity');
    expect(await cache.get('key', lookup('revoked'))).toBe('revoked');
    // Expired long ago (past expiredMs): waits for the lookup.
    await sleep(250);
    expect(await cache.get('key', lookup('fresh'))).toBe('fresh');
  });

  test('answerNow gives what get would give without waiting, and nothing where get would compute or wait', async () => {
    const signals = localSignals();
    const cache = createReadCache<number>(signals, { ...options, staleMs: 50 });
    const page = counter('latest');
    expect(cache.answerNow('a', undefined, page.compute)).toBeUndefined(); // a miss: get would compute
    expect(cache.has('a')).toBe(false);
    expect(page.computed).toBe(0);
    await cache.get('a', page.compute);
    expect(cache.has('a')).toBe(true);
    expect(cache.answerNow('a', undefined, page.compute)).toBe(1);

    // Stale within the bound: answered, and the one background refresh started, as get does.
    signals.changed('latest');
    expect(cache.answerNow('a', undefined, page.compute)).toBe(1);
    await settle();
    expect(page.computed).toBe(2);
    expect(cache.answerNow('a', undefined, page.compute)).toBe(2);

    // A viewer who wrote since: nothing (get would compute a page after the write).
    signals.writes.record('writer');
    expect(cache.answerNow('a', 'writer', page.compute)).toBeUndefined();
    expect(cache.answerNow('a', 'reader', page.compute)).toBe(2);

    // Stale past the bound: nothing (get would wait for a refresh).
    signals.changed('latest');
    await sleep(60);
    expect(cache.answerNow('a', 'reader', page.compute)).toBeUndefined();
    // A cache whose refresh is the caller's answers a fresh or stale entry, but never starts the
    // refresh that is due: it gives nothing, and the caller's get runs it.
    const callers = createReadCache<number>(signals, { ...options, refresh: 'caller', staleMs: 60_000 });
    const other = counter('trending');
    await callers.get('b', other.compute);
    expect(callers.answerNow('b', undefined, other.compute)).toBe(1);
    signals.changed('trending');
    expect(callers.answerNow('b', undefined, other.compute)).toBeUndefined();
    expect(other.computed).toBe(1);
    expect(await callers.get('b', other.compute)).toBe(2);
  });

  test('a TTL of 0 caches nothing', async () => {
    const cache = createReadCache<number>(localSignals(), { ...options, ttlMs: 0 });
    const page = counter();
    await cache.get('a', page.compute);
    await cache.get('a', page.compute);
    expect(page.computed).toBe(2);
  });
});

describe('recent writes', () => {
  test('a forgotten writer still reads past entries older than its write', () => {
    const writes = createRecentWrites(2);
    writes.record('a');
    const afterA = writes.now();
    writes.record('b');
    writes.record('c'); // a is forgotten
    expect(writes.since('a')).toBeGreaterThanOrEqual(afterA);
    expect(writes.since('c')).toBe(writes.now());
    expect(writes.since('nobody')).toBe(afterA);
  });
});
