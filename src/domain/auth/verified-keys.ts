import { matchingHash } from './api-key.js';

/**
 * Whether a presented key is the one a stored hash was made from, without hashing it again on every
 * request: a key that matched once is remembered with its hash (a SHA-256 per request was ~6 % of
 * a cached feed read's CPU). Only keys that matched are remembered, so guesses never fill it; past
 * `maxEntries` the oldest go first (forgetting costs one hash, never a wrong answer). A remembered
 * key still has to match the stored hash it is checked against, and revocation is decided by the
 * stored row before this is asked, so nothing here outlives a key.
 */
export interface VerifiedKeys {
  matches(key: string, storedHash: Buffer): boolean;
  readonly size: number;
}

export function createVerifiedKeys(maxEntries: number): VerifiedKeys {
  const hashes = new Map<string, Buffer>();
  return {
    matches(key, storedHash) {
      const known = hashes.get(key);
      // Both sides are our own hashes here (the presented key is not compared byte by byte).
      if (known) return known.equals(storedHash);
      const presented = matchingHash(key, storedHash);
      if (!presented) return false;
      if (hashes.size >= maxEntries) hashes.delete(hashes.keys().next().value!);
      hashes.set(key, presented);
      return true;
    },
    get size() {
      return hashes.size;
    },
  };
}
