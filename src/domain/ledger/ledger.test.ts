import { describe, expect, test } from 'vitest';
import { assertBalanced, paidEngagementLegs, reversalLegs, UnbalancedMovementError } from './ledger.js';

describe('paidEngagementLegs', () => {
  test('a plain post: the author pays $1 to the treasury', () => {
    expect(paidEngagementLegs('a', undefined)).toEqual([
      { account: { kind: 'user', accountId: 'a' }, units: -1_000_000n, counts: 'spent' },
      { account: { kind: 'treasury' }, units: 1_000_000n, counts: 'none' },
    ]);
  });

  test("a reply to someone else's post pays the parent author half, the treasury the rest", () => {
    expect(paidEngagementLegs('a', 'b').map((leg) => [leg.account, leg.units, leg.counts])).toEqual([
      [{ kind: 'user', accountId: 'a' }, -1_000_000n, 'spent'],
      [{ kind: 'user', accountId: 'b' }, 500_000n, 'earned'],
      [{ kind: 'treasury' }, 500_000n, 'none'],
    ]);
  });

  test('engaging with one own post pays nothing to oneself', () => {
    expect(paidEngagementLegs('a', 'a')).toHaveLength(2);
  });

  test('an odd price rounds the share down and the treasury takes the remainder', () => {
    const legs = paidEngagementLegs('a', 'b', 3n);
    expect(legs.map((leg) => leg.units)).toEqual([-3n, 1n, 2n]);
  });
});

describe('assertBalanced', () => {
  test('refuses legs that do not sum to zero, a zero leg, or a single leg', () => {
    const a = { kind: 'user', accountId: 'a' } as const;
    expect(() =>
      assertBalanced([
        { account: a, units: -2n, counts: 'none' },
        { account: { kind: 'treasury' }, units: 1n, counts: 'none' },
      ]),
    ).toThrow(UnbalancedMovementError);
    expect(() =>
      assertBalanced([
        { account: a, units: 0n, counts: 'none' },
        { account: { kind: 'treasury' }, units: 0n, counts: 'none' },
      ]),
    ).toThrow(/zero/);
    expect(() => assertBalanced([{ account: a, units: 1n, counts: 'none' }])).toThrow(/two legs/);
  });

  test('a reversal undoes every leg', () => {
    const legs = paidEngagementLegs('a', 'b');
    const undo = reversalLegs(legs);
    assertBalanced(undo);
    expect(legs.map((l, i) => l.units + undo[i]!.units)).toEqual([0n, 0n, 0n]);
  });
});
