import { describe, expect, test } from 'vitest';
import { formatMicroUsd, parseUsdToMicro } from './usd.js';

describe('parseUsdToMicro', () => {
  test('reads whole and fractional dollars exactly', () => {
    expect(parseUsdToMicro('12')).toBe(12_000_000n);
    expect(parseUsdToMicro('0.01')).toBe(10_000n);
    expect(parseUsdToMicro('1.5')).toBe(1_500_000n);
    expect(parseUsdToMicro('0.000001')).toBe(1n);
    // 0.1 + 0.2 style float errors cannot happen: the digits are read, not computed.
    expect(parseUsdToMicro('0.3')).toBe(300_000n);
    expect(parseUsdToMicro('999999999999.999999')).toBe(999_999_999_999_999_999n);
  });

  test('refuses what is not a plain non-negative amount', () => {
    for (const bad of ['', '-1', '1e3', '1.0000001', 'abc', '1,5', '.5', '1.']) {
      expect(() => parseUsdToMicro(bad), bad).toThrow(/not a dollar amount/);
    }
  });
});

describe('formatMicroUsd', () => {
  test('prints the shortest exact decimal', () => {
    expect(formatMicroUsd(1_500_000n)).toBe('1.5');
    expect(formatMicroUsd(1n)).toBe('0.000001');
    expect(formatMicroUsd(-2_000_000n)).toBe('-2');
    expect(formatMicroUsd(0n)).toBe('0');
  });
});
