import { describe, expect, test } from 'vitest';
import { HashSet } from './followed-accounts.js';

describe('HashSet (the follower’s typed-array set of 30-bit hashes)', () => {
  test('holds what was added across many growths, nothing else, each once', () => {
    const set = new HashSet();
    const added = new Set<number>();
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x3fffffff);
    for (let i = 0; i < 200_000; i++) {
      const value = next();
      set.add(value);
      added.add(value);
    }
    // 0 and the largest 30-bit number are values like any other.
    for (const value of [0, 0x3fffffff]) {
      set.add(value);
      added.add(value);
    }
    set.add(0);
    expect(set.size).toBe(added.size);
    for (const value of added) expect(set.has(value)).toBe(true);
    let strangers = 0;
    for (let i = 0; i < 100_000; i++) {
      const value = next();
      if (!added.has(value) && set.has(value)) strangers++;
    }
    expect(strangers).toBe(0);
  });
});
