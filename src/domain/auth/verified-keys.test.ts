import { describe, expect, test } from 'vitest';
import { generateApiKey } from './api-key.js';
import { createVerifiedKeys } from './verified-keys.js';

describe('verified keys', () => {
  test('a remembered key still matches only its own hash; guesses are never remembered', () => {
    const verified = createVerifiedKeys(10);
    const a = generateApiKey();
    const b = generateApiKey();
    expect(verified.matches(`${a.key}x`, a.hash)).toBe(false);
    expect(verified.matches(b.key, a.hash)).toBe(false);
    expect(verified.size).toBe(0);
    expect(verified.matches(a.key, a.hash)).toBe(true);
    expect(verified.size).toBe(1);
    expect(verified.matches(a.key, a.hash)).toBe(true); // from memory
    expect(verified.matches(a.key, b.hash)).toBe(false); // remembered, but not this hash
  });

  test('keeps at most maxEntries keys, forgetting the oldest, and still answers forgotten ones', () => {
    const verified = createVerifiedKeys(2);
    const keys = [generateApiKey(), generateApiKey(), generateApiKey()];
    for (const k of keys) expect(verified.matches(k.key, k.hash)).toBe(true);
    expect(verified.size).toBe(2);
    expect(verified.matches(keys[0]!.key, keys[0]!.hash)).toBe(true);
    expect(verified.matches(keys[0]!.key, keys[1]!.hash)).toBe(false);
  });
});
