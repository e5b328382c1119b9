import { describe, expect, test } from 'vitest';
import { effectiveLimit, RATE_LIMITS, type RateLimitBucket } from './rate-limit-policy.js';

describe('RATE_LIMITS', () => {
  test('holds the per-minute budgets of the spec and an hourly sign-up budget', () => {
    expect(RATE_LIMITS).toEqual({
      post: { limit: 10, windowSeconds: 60 },
      read: { limit: 60, windowSeconds: 60 },
      like: { limit: 30, windowSeconds: 60 },
      repost: { limit: 10, windowSeconds: 60 },
      send: { limit: 5, windowSeconds: 60 },
      webhooks: { limit: 20, windowSeconds: 60 },
      reports: { limit: 10, windowSeconds: 60 },
      signup: { limit: 5, windowSeconds: 3_600 },
      signup_global: { limit: 100, windowSeconds: 3_600 },
      anonymous: { limit: 60, windowSeconds: 60 },
    });
  });
});

describe('effectiveLimit', () => {
  test('multiplier 0 turns every limit off', () => {
    for (const bucket of Object.keys(RATE_LIMITS) as RateLimitBucket[]) {
      expect(effectiveLimit(bucket, 0), bucket).toBeNull();
    }
  });

  test('multiplier 1 keeps the spec limit and 2 doubles it', () => {
    expect(effectiveLimit('post', 1)).toBe(10);
    expect(effectiveLimit('read', 2)).toBe(120);
    expect(effectiveLimit('send', 2)).toBe(10);
  });

  test('rounds a fractional result down but never below 1', () => {
    expect(effectiveLimit('send', 0.5)).toBe(2);
    expect(effectiveLimit('like', 1.5)).toBe(45);
    expect(effectiveLimit('post', 0.01)).toBe(1);
  });

  test('refuses a negative or non-finite multiplier', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => effectiveLimit('post', bad), String(bad)).toThrow(RangeError);
    }
  });
});
