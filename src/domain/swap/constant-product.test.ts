import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { quoteSellNative, SWAP_FEE_BPS } from './constant-product.js';

/** Reserves and amounts over the whole range a pool can see: 1 unit to 10^20. */
const reserve = fc.bigInt({ min: 1n, max: 10n ** 20n });
const amount = fc.bigInt({ min: 1n, max: 10n ** 20n });

describe('quoteSellNative (x*y=k, 30 bps)', () => {
  test('the product of the reserves never decreases', () => {
    fc.assert(
      fc.property(reserve, reserve, amount, (x, y, a) => {
        const q = quoteSellNative({ nativeUnits: x, usdcMicro: y }, a);
        expect(q.reservesAfter.nativeUnits * q.reservesAfter.usdcMicro).toBeGreaterThanOrEqual(x * y);
      }),
      { numRuns: 2_000 },
    );
  });

  test('the output never reaches the USDC reserve and is never negative', () => {
    fc.assert(
      fc.property(reserve, reserve, amount, (x, y, a) => {
        const q = quoteSellNative({ nativeUnits: x, usdcMicro: y }, a);
        expect(q.amountUsdcMicro).toBeGreaterThanOrEqual(0n);
        expect(q.amountUsdcMicro).toBeLessThan(y);
        expect(q.reservesAfter.usdcMicro).toBeGreaterThan(0n);
      }),
      { numRuns: 2_000 },
    );
  });

  test('rounding never favours the user: out <= the exact rational price, and is within 1 unit of the fee-rounded one', () => {
    fc.assert(
      fc.property(reserve, reserve, amount, (x, y, a) => {
        const q = quoteSellNative({ nativeUnits: x, usdcMicro: y }, a);
        // Exact: out = a*(1-f)*y / (x + a*(1-f)), f = 30/10000, as the fraction num/den.
        const num = a * (10_000n - SWAP_FEE_BPS) * y;
        const den = x * 10_000n + a * (10_000n - SWAP_FEE_BPS);
        expect(q.amountUsdcMicro * den).toBeLessThanOrEqual(num);
        // With the fee rounded up to whole units, the curve's exact output, floored.
        const net = a - q.feeTokens;
        expect(q.amountUsdcMicro * (x + net)).toBeLessThanOrEqual(net * y);
        expect((q.amountUsdcMicro + 1n) * (x + net)).toBeGreaterThan(net * y);
      }),
      { numRuns: 2_000 },
    );
  });

  test('the fee is 30 bps of the amount, rounded up, and stays in the pool', () => {
    fc.assert(
      fc.property(reserve, reserve, amount, (x, y, a) => {
        const q = quoteSellNative({ nativeUnits: x, usdcMicro: y }, a);
        expect(q.feeTokens * 10_000n).toBeGreaterThanOrEqual(a * SWAP_FEE_BPS);
        expect((q.feeTokens - 1n) * 10_000n).toBeLessThan(a * SWAP_FEE_BPS);
        // The whole amount enters the native reserve, fee included.
        expect(q.reservesAfter.nativeUnits).toBe(x + a);
      }),
      { numRuns: 2_000 },
    );
  });

  test('a fee applies: the quote is below the fee-free curve whenever that pays at least one unit', () => {
    fc.assert(
      fc.property(reserve, reserve, fc.bigInt({ min: 334n, max: 10n ** 20n }), (x, y, a) => {
        const q = quoteSellNative({ nativeUnits: x, usdcMicro: y }, a);
        const feeFree = (a * y) / (x + a);
        expect(q.amountUsdcMicro).toBeLessThanOrEqual(feeFree);
        expect(q.feeTokens).toBeGreaterThan(0n);
      }),
      { numRuns: 1_000 },
    );
  });

  test('a worked example against the seeded pool: 1,000 tokens for ~$99.6', () => {
    const q = quoteSellNative(
      { nativeUnits: 10_000_000n * 10n ** 9n, usdcMicro: 1_000_000n * 10n ** 6n },
      1_000n * 10n ** 9n,
    );
    expect(q.feeTokens).toBe(3n * 10n ** 9n);
    // 997e9 * 1e12 / (1e16 + 997e9), floored
    expect(q.amountUsdcMicro).toBe((997n * 10n ** 9n * 10n ** 12n) / (10n ** 16n + 997n * 10n ** 9n));
    expect(q.priceImpactBps).toBe(0);
  });
});
