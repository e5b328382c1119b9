import { describe, expect, test } from 'vitest';
import { requireTimeRange } from '../analytics/time-range.js';
import { isFinance, readsAsFinance, requireFinance, requireOwnerOrFinance } from './access-rules.js';

describe('access rules', () => {
  const user = { accountId: 'a', role: 'user' as const };
  const finance = { accountId: 'f', role: 'finance' as const };
  const admin = { accountId: 'x', role: 'admin' as const };

  test('finance and admin are finance; a user and no viewer are not', () => {
    expect([user, finance, admin, null].map(isFinance)).toEqual([false, true, true, false]);
    expect(() => requireFinance(user, 'The report')).toThrow('The report needs the finance or admin role');
    expect(() => requireFinance(admin, 'The report')).not.toThrow();
  });

  test("finance's reads need the role and a key holding `read`: an `engage` key of finance reads none", () => {
    const keyOf = (role: 'user' | 'finance' | 'admin', ...scopes: Array<'read' | 'engage'>) => ({
      role,
      scopes: new Set(scopes),
    });
    expect(readsAsFinance(keyOf('finance', 'read'))).toBe(true);
    expect(readsAsFinance(keyOf('admin', 'read', 'engage'))).toBe(true);
    expect(readsAsFinance(keyOf('finance', 'engage'))).toBe(false);
    expect(readsAsFinance(keyOf('admin', 'engage'))).toBe(false);
    expect(readsAsFinance(keyOf('user', 'read'))).toBe(false);
    expect(readsAsFinance(null)).toBe(false);
  });

  test('an owner reads its own; finance reads anyone; another user is refused', () => {
    expect(() => requireOwnerOrFinance(user, 'a', 'mine')).not.toThrow();
    expect(() => requireOwnerOrFinance(finance, 'a', 'mine')).not.toThrow();
    expect(() => requireOwnerOrFinance(user, 'b', "b's")).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    );
  });

  test('a time range must move forward and stay within its bound', () => {
    const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n));
    expect(() => requireTimeRange(day(0), day(400), 400)).not.toThrow();
    expect(() => requireTimeRange(day(0), day(401), 400)).toThrow('at most 400 days later');
    expect(() => requireTimeRange(day(1), day(1), 400)).toThrow('to must be after from');
  });
});
