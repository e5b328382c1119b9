import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import { MAX_SWAP_TOKENS, parseAmountTokens, parseMinAmountUsdc } from './swap-rules.js';

describe('parseAmountTokens', () => {
  test('takes safe integers and strings of digits, exactly', () => {
    expect(parseAmountTokens(5)).toBe(5n);
    expect(parseAmountTokens('123456789012345678')).toBe(123_456_789_012_345_678n);
    expect(parseAmountTokens(MAX_SWAP_TOKENS.toString())).toBe(MAX_SWAP_TOKENS);
  });

  test.each([
    0,
    -1,
    1.5,
    '1.5',
    '-3',
    '0',
    ' 1',
    'abc',
    '',
    2 ** 60,
    Number.NaN,
    null,
    undefined,
    true,
    {},
    '1e9',
  ])('refuses %j as invalid_request', (raw) => {
    expect(() => parseAmountTokens(raw)).toThrow(AppError);
  });

  test('refuses one unit above the bound', () => {
    expect(() => parseAmountTokens((MAX_SWAP_TOKENS + 1n).toString())).toThrow(/at most/);
  });
});

describe('parseMinAmountUsdc', () => {
  test('dollars to micro-USD, absent is no bound', () => {
    expect(parseMinAmountUsdc(undefined)).toBeNull();
    expect(parseMinAmountUsdc(0)).toBe(0n);
    expect(parseMinAmountUsdc(1.25)).toBe(1_250_000n);
    expect(parseMinAmountUsdc('0.000001')).toBe(1n);
  });
  test.each([-1, '1.0000001', 'x', 1e-7, true])('refuses %j', (raw) => {
    expect(() => parseMinAmountUsdc(raw)).toThrow(AppError);
  });
});
