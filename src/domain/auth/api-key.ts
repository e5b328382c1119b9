import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

export type Scope = 'read' | 'post' | 'engage' | 'send';
export const ALL_SCOPES: readonly Scope[] = ['read', 'post', 'engage', 'send'];
/** The spec: an account may hold at most 2 keys. */
export const MAX_ACTIVE_KEYS = 2;

/** Every key shares one fixed live prefix (spec: `<prefix>_live_{random}`). */
export const KEY_PREFIX = 'lf_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 8 lookup characters + 32 secret characters: ~238 bits of randomness in all. */
const LOOKUP_LENGTH = 8;
const RANDOM_LENGTH = 40;
const KEY_FORMAT = new RegExp(`^${KEY_PREFIX}([0-9A-Za-z]{${RANDOM_LENGTH}})$`);

export interface NewApiKey {
  /** The whole key: shown once, never stored. */
  key: string;
  /** Public id of the key (its first random characters): stored, listed, used to revoke. */
  id: string;
  /** SHA-256 of the whole key: what is stored. */
  hash: Buffer;
}

export function generateApiKey(): NewApiKey {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(BASE62.length)];
  const key = `${KEY_PREFIX}${random}`;
  return { key, id: random.slice(0, LOOKUP_LENGTH), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** The lookup id of a well-formed key, or undefined for anything that cannot be one of ours. */
export function lookupIdOf(key: string): string | undefined {
  const match = KEY_FORMAT.exec(key);
  return match?.[1]?.slice(0, LOOKUP_LENGTH);
}

/** Constant-time comparison of a presented key with a stored hash. */
export function keyMatches(key: string, storedHash: Buffer): boolean {
  return matchingHash(key, storedHash) !== undefined;
}

/** The presented key's hash when it matches the stored one (constant-time), else undefined. */
export function matchingHash(key: string, storedHash: Buffer): Buffer | undefined {
  const presented = hashApiKey(key);
  return presented.length === storedHash.length && timingSafeEqual(presented, storedHash)
    ? presented
    : undefined;
}

export function parseScopes(value: unknown): Scope[] {
  const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
  if (!Array.isArray(list) || list.length === 0)
    throw new TypeError(`scopes must be a non-empty list of ${ALL_SCOPES.join(', ')}`);
  const scopes = [...new Set(list)];
  for (const scope of scopes) {
    if (!ALL_SCOPES.includes(scope as Scope))
      throw new TypeError(`unknown scope ${JSON.stringify(scope)}: expected ${ALL_SCOPES.join(', ')}`);
  }
  return scopes as Scope[];
}
