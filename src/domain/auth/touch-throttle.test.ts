import { describe, expect, test } from 'vitest';
import { createTouchThrottle } from './touch-throttle.js';

describe('touch throttle', () => {
  test('writes a key at most once per interval', () => {
    const throttle = createTouchThrottle({ intervalMs: 60_000, maxEntries: 100 });
    expect(throttle.shouldTouch('a', 0)).toBe(true);
    expect(throttle.shouldTouch('a', 30_000)).toBe(false);
    expect(throttle.shouldTouch('a', 60_000)).toBe(false);
    expect(throttle.shouldTouch('b', 60_000)).toBe(true);
    expect(throttle.shouldTouch('a', 60_001)).toBe(true);
    expect(throttle.shouldTouch('a', 100_000)).toBe(false);
  });

  test('stays bounded however many keys are used, forgetting the oldest first', () => {
    const throttle = createTouchThrottle({ intervalMs: 60_000, maxEntries: 1_000 });
    // 50,000 distinct keys within one interval: every entry is still fresh, only the cap holds it.
    for (let i = 0; i < 50_000; i++) throttle.shouldTouch(`key-${i}`, 1_000);
    expect(throttle.size).toBe(1_000);
    // The newest are remembered (no second write), the oldest were forgotten (written again).
    expect(throttle.shouldTouch('key-49999', 2_000)).toBe(false);
    expect(throttle.shouldTouch('key-0', 2_000)).toBe(true);
    expect(throttle.size).toBe(1_000);
  });

  test('drops entries older than the interval: they decide nothing', () => {
    const throttle = createTouchThrottle({ intervalMs: 60_000, maxEntries: 1_000 });
    for (let i = 0; i < 500; i++) throttle.shouldTouch(`old-${i}`, 0);
    expect(throttle.size).toBe(500);
    // One use after the interval: all 500 stale entries go, only the fresh one stays.
    expect(throttle.shouldTouch('new', 60_001)).toBe(true);
    expect(throttle.size).toBe(1);
  });
});
