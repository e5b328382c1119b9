import { describe, expect, test } from 'vitest';
import { balanceCheckDue, firstBalanceCheckAt } from './balance-check.js';

const at = (iso: string) => new Date(iso);

describe('when the daily balance check runs', () => {
  test('first at the next occurrence of the hour after the start, never at the start', () => {
    expect(firstBalanceCheckAt(at('2026-11-29T01:30:00Z'), 3).toISOString()).toBe('2026-11-29T03:00:00.000Z');
    expect(firstBalanceCheckAt(at('2026-11-29T03:00:00Z'), 3).toISOString()).toBe('2026-11-30T03:00:00.000Z');
    expect(firstBalanceCheckAt(at('2026-11-29T14:05:00Z'), 3).toISOString()).toBe('2026-11-30T03:00:00.000Z');
    expect(firstBalanceCheckAt(at('2026-12-31T23:59:00Z'), 0).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  test('a process started past the hour does not run it that day', () => {
    const first = firstBalanceCheckAt(at('2026-11-29T14:05:00Z'), 3);
    expect(balanceCheckDue(at('2026-11-29T14:06:00Z'), first, 3)).toBe(false);
    expect(balanceCheckDue(at('2026-11-29T23:59:00Z'), first, 3)).toBe(false);
    expect(balanceCheckDue(at('2026-11-30T02:59:00Z'), first, 3)).toBe(false);
    expect(balanceCheckDue(at('2026-11-30T03:00:00Z'), first, 3)).toBe(true);
  });

  test('after the first run, every day from the hour on (the day row says whether it ran)', () => {
    const first = firstBalanceCheckAt(at('2026-11-29T01:00:00Z'), 3);
    expect(balanceCheckDue(at('2026-11-29T03:00:00Z'), first, 3)).toBe(true);
    expect(balanceCheckDue(at('2026-11-29T22:00:00Z'), first, 3)).toBe(true);
    expect(balanceCheckDue(at('2026-11-30T00:30:00Z'), first, 3)).toBe(false);
    expect(balanceCheckDue(at('2026-11-30T03:01:00Z'), first, 3)).toBe(true);
  });
});
