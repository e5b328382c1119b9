import { describe, expect, test } from 'vitest';
import {
  cutIntoBatches,
  maxTransfersPerBatch,
  payoutTransactionBytes,
  TRANSACTION_SIZE_LIMIT,
} from './payout-batches.js';

describe('payout batches', () => {
  test('the largest batch fits the size limit and one more transfer would not', () => {
    for (const memo of [0, 40, 64, 127, 200]) {
      const n = maxTransfersPerBatch(memo);
      expect(payoutTransactionBytes(n, memo)).toBeLessThanOrEqual(TRANSACTION_SIZE_LIMIT);
      expect(payoutTransactionBytes(n + 1, memo)).toBeGreaterThan(TRANSACTION_SIZE_LIMIT);
    }
    // 358 fixed bytes + 49 per transfer + the memo instruction: 16 transfers with a 64-byte memo.
    expect(maxTransfersPerBatch(64)).toBe(16);
    expect(payoutTransactionBytes(16, 64)).toBe(358 + 16 * 49 + 3 + 64);
  });

  test('a batch that also creates every recipient token account holds 8 transfers with a 64-byte memo', () => {
    for (const memo of [0, 64, 200]) {
      const n = maxTransfersPerBatch(memo, TRANSACTION_SIZE_LIMIT, true);
      expect(payoutTransactionBytes(n, memo, n)).toBeLessThanOrEqual(TRANSACTION_SIZE_LIMIT);
      expect(payoutTransactionBytes(n + 1, memo, n + 1)).toBeGreaterThan(TRANSACTION_SIZE_LIMIT);
    }
    // The System and ATA programs once (64 bytes), then 42 bytes per create: owner key + instruction.
    expect(payoutTransactionBytes(8, 64, 8)).toBe(payoutTransactionBytes(8, 64) + 64 + 8 * 42);
    expect(maxTransfersPerBatch(64, TRANSACTION_SIZE_LIMIT, true)).toBe(8);
    expect(() => payoutTransactionBytes(2, 64, 3)).toThrow(RangeError);
  });

  test('cuts payouts into full batches and a last partial one, in order', () => {
    const payouts = Array.from({ length: 35 }, (_, k) => k);
    const batches = cutIntoBatches(payouts, 16);
    expect(batches.map((b) => b.length)).toEqual([16, 16, 3]);
    expect(batches.flat()).toEqual(payouts);
    expect(cutIntoBatches([], 16)).toEqual([]);
    expect(() => cutIntoBatches(payouts, 0)).toThrow();
  });
});
