import { describe, expect, test } from 'vitest';
import { generateApiKey, hashApiKey, keyMatches, lookupIdOf, parseScopes } from './api-key.js';

describe('API keys', () => {
  test('have the live prefix, 40 base62 characters, and a lookup id from their start', () => {
    const { key, id, hash } = generateApiKey();
    expect(key).toMatch(/^lf_live_[0-9A-Za-z]{40}$/);
    expect(id).toBe(key.slice('lf_live_'.length, 'lf_live_'.length + 8));
    expect(lookupIdOf(key)).toBe(id);
    expect(hash.equals(hashApiKey(key))).toBe(true);
    expect(generateApiKey().key).not.toBe(key);
  });

  test('a key matches only its own hash', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(keyMatches(a.key, a.hash)).toBe(true);
    expect(keyMatches(a.key, b.hash)).toBe(false);
    expect(keyMatches(`${a.key}x`, a.hash)).toBe(false);
  });

  test('strings that are not keys have no lookup id', () => {
    for (const bad of [
      '',
      'lf_live_',
      'lf_test_' + 'a'.repeat(40),
      'lf_live_' + 'a'.repeat(39),
      'lf_live_' + '!'.repeat(40),
    ]) {
      expect(lookupIdOf(bad)).toBeUndefined();
    }
  });

  test('scopes parse from a list or a comma string and refuse unknown ones', () => {
    expect(parseScopes('read,post')).toEqual(['read', 'post']);
    expect(parseScopes(['send', 'send'])).toEqual(['send']);
    expect(() => parseScopes('read,admin')).toThrow(/unknown scope "admin"/);
    expect(() => parseScopes([])).toThrow(/non-empty/);
  });
});
