import { describe, expect, test } from 'vitest';
import type { ChangeSignals, ChangeTopic } from './change-signals.js';
import { createReadCache } from './read-cache.js';

/** The in-process half of ChangeSignals: listeners called synchronously. */
function localSignals(): Pick<ChangeSignals, 'onChange' | 'changed'> {
  const listeners = new Set<() => void>();
  return {
    onChange: (_topic: ChangeTopic, listener: () => void) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    changed: () => listeners.forEach((listener) => listener()),
  };
}

const deferred = <T>() => {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};

describe('read cache', () => {
  const options = { topics: ['content' as const], ttlMs: 60_000, maxEntries: 2 };

  test('concurrent misses share one computation; a hit computes nothing', async () => {
    const cache = createReadCache<number>(localSignals(), options);
    let computed = 0;
    const compute = () => Promise.resolve(++computed);
    expect(await Promise.all([cache.get('a', compute), cache.get('a', compute)])).toEqual([1, 1]);
    expect(await cache.get('a', compute)).toBe(1);
    expect(computed).toBe(1);
  });

  test('a request after a change never gets a computation that began before it', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, options);
    const slow = deferred<string>();
    const before = cache.get('page', () => slow.promise);
    signals.changed('content');
    const after = cache.get('page', () => Promise.resolve('fresh'));
    slow.resolve('stale');
    expect(await before).toBe('stale');
    expect(await after).toBe('fresh');
    expect(await cache.get('page', () => Promise.resolve('recomputed'))).toBe('fresh');
  });

  test('remember() drops a value whose computation saw a change', async () => {
    const signals = localSignals();
    const cache = createReadCache<string>(signals, options);
    const version = cache.version();
    signals.changed('content');
    cache.remember('answer', 'stale', version);
    expect(cache.peek('answer')).toBeUndefined();
    cache.remember('answer', 'fresh', cache.version());
    expect(await cache.peek('answer')).toBe('fresh');
  });

  test('failures are not kept, entries expire, and the oldest entry makes room', async () => {
    const cache = createReadCache<string>(localSignals(), { ...options, ttlMs: 20 });
    await expect(cache.get('x', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('x', () => Promise.resolve('up'))).toBe('up');
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(await cache.get('x', () => Promise.resolve('later'))).toBe('later');
    await cache.get('y', () => Promise.resolve('y'));
    await cache.get('z', () => Promise.resolve('z'));
    expect(cache.size).toBe(2);
    expect(cache.peek('x')).toBeUndefined();
  });

  test('a TTL of 0 caches nothing', async () => {
    const cache = createReadCache<number>(localSignals(), { ...options, ttlMs: 0 });
    let computed = 0;
    await cache.get('a', () => Promise.resolve(++computed));
    await cache.get('a', () => Promise.resolve(++computed));
    expect(computed).toBe(2);
  });
});
