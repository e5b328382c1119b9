import { describe, expect, test } from 'vitest';
import { trustProxyHops } from './trust-proxy.js';

describe('trustProxyHops', () => {
  test('0 trusts no X-Forwarded-* header at all', () => {
    expect(trustProxyHops(0)).toBe(false);
  });

  test('n trusts the socket peer and the n - 1 rightmost X-Forwarded-For entries, no further', () => {
    const trust = trustProxyHops(2);
    if (!trust) throw new Error('expected a trust function');
    expect([0, 1, 2, 3].map((hop) => trust('10.0.0.1', hop))).toEqual([true, true, false, false]);
  });

  test('refuses a negative or fractional count', () => {
    for (const bad of [-1, 1.5, Number.NaN])
      expect(() => trustProxyHops(bad), String(bad)).toThrow(RangeError);
  });
});
