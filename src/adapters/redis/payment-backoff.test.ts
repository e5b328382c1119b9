import { describe, expect, test } from 'vitest';
import { PAYMENT_RETRY_CAP_MS, paymentRetryDelayMs } from './payments-queue.js';

describe('paymentRetryDelayMs', () => {
  test('doubles from 0.5 s and stops at 60 s (no jitter drawn)', () => {
    const noJitter = () => 0;
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => paymentRetryDelayMs(n, noJitter));
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
  });

  test('never waits more than 60 s, however many attempts failed (an hour-long outage and more)', () => {
    for (const attempts of [10, 30, 31, 100, 1_000, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      for (const draw of [0, 0.5, 0.999_999]) {
        const delay = paymentRetryDelayMs(attempts, () => draw);
        expect(delay).toBeLessThanOrEqual(PAYMENT_RETRY_CAP_MS);
        expect(delay).toBeGreaterThanOrEqual(PAYMENT_RETRY_CAP_MS * 0.8);
      }
    }
  });

  test('jitter only shortens a delay, by at most 20%', () => {
    expect(paymentRetryDelayMs(1, () => 0.999_999)).toBe(400);
    expect(paymentRetryDelayMs(3, () => 0.5)).toBe(1_800);
    // attemptsMade below 1 (never given by BullMQ) reads as the first retry.
    expect(paymentRetryDelayMs(0, () => 0)).toBe(500);
  });
});
