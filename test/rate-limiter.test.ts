import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import {
  createRateLimiter,
  encodeSubject,
  type RateLimitDecision,
} from '../src/adapters/redis/rate-limiter.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let secondConnection: Redis;
beforeAll(async () => {
  env = await openTestEnv();
  secondConnection = createRedis(env.app.stack.redis.url, 'client');
});
afterAll(async () => {
  await secondConnection?.quit();
  await env?.close();
});

/** A fake clock on a minute boundary (1_800_000_000_000 is a multiple of 60_000 ms). */
const T0 = 1_800_000_000_000;

function limiter(options: { multiplier?: number; now?: () => number; redis?: Redis } = {}) {
  return createRateLimiter(options.redis ?? env.app.redis, {
    prefix: env.config.REDIS_PREFIX,
    multiplier: options.multiplier ?? 1,
    ...(options.now ? { now: options.now } : {}),
  });
}

/** Each test its own subject, so tests of this file never share a budget. */
let subjects = 0;
const newSubject = () => `acct_${++subjects}_${Date.now()}`;

/**
 * Tests on the real clock wait out the last 2 s of a minute, so a window boundary cannot fall
 * between their requests.
 */
async function awayFromWindowEdge() {
  const leftMs = 60_000 - (Date.now() % 60_000);
  if (leftMs < 2_000) await new Promise((resolve) => setTimeout(resolve, leftMs + 50));
}

function limited(decision: RateLimitDecision) {
  if (decision.disabled) throw new Error('expected limits to be on');
  return decision;
}

describe('createRateLimiter', () => {
  test('refuses the 11th post of a window, with Retry-After to the window end', async () => {
    await awayFromWindowEdge();
    const rl = limiter();
    const subject = newSubject();
    for (let i = 0; i < 10; i++) expect(limited(await rl.consume('post', subject)).allowed).toBe(true);
    const refused = limited(await rl.consume('post', subject));
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(refused.retryAfterSeconds).toBe(refused.resetSeconds);
  });

  test('counts remaining down exactly and leaves retryAfterSeconds out while allowed', async () => {
    const rl = limiter({ now: () => T0 + 1_000 });
    const subject = newSubject();
    const remaining: number[] = [];
    for (let i = 0; i < 12; i++) {
      const decision = limited(await rl.consume('send', subject));
      remaining.push(decision.remaining);
      expect(decision.limit).toBe(5);
      if (decision.allowed) expect(decision).not.toHaveProperty('retryAfterSeconds');
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
  });

  test('prints the draft-ietf-httpapi-ratelimit-headers values exactly', async () => {
    const rl = limiter({ now: () => T0 + 18_000 });
    const subject = newSubject();
    const first = limited(await rl.consume('post', subject));
    expect(first.policy).toBe('"post";q=10;w=60');
    expect(first.header).toBe('"post";r=9;t=42');
    for (let i = 0; i < 2; i++) await rl.consume('post', subject);
    expect(limited(await rl.consume('post', subject)).header).toBe('"post";r=6;t=42');

    const signup = limited(await rl.consume('signup', '2001:db8::1'));
    expect(signup.policy).toBe('"signup";q=5;w=3600');
    expect(signup.header).toBe(`"signup";r=4;t=${3_600 - 18}`);
  });

  test('refused requests do not push the window end out', async () => {
    let nowMs = T0 + 1_000;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (let i = 0; i < 10; i++) await rl.consume('repost', subject);
    nowMs = T0 + 30_000;
    for (let i = 0; i < 5; i++) {
      const refused = limited(await rl.consume('repost', subject));
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterSeconds).toBe(30);
    }
    const key = `${env.config.REDIS_PREFIX}:rl:repost:${encodeSubject(subject)}:${T0 / 60_000}`;
    expect(await env.app.redis.get(key)).toBe('15');
    // Set once, by the first hit, to that hit's distance from the window end.
    const pttl = await env.app.redis.pttl(key);
    expect(pttl).toBeGreaterThan(50_000);
    expect(pttl).toBeLessThanOrEqual(59_000);
  });

  test('two processes on separate connections share one budget', async () => {
    await awayFromWindowEdge();
    const a = limiter();
    const b = limiter({ redis: secondConnection });
    const subject = newSubject();
    const remaining: number[] = [];
    for (let i = 0; i < 10; i++) {
      const decision = limited(await (i % 2 === 0 ? a : b).consume('post', subject));
      expect(decision.allowed).toBe(true);
      remaining.push(decision.remaining);
    }
    expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(limited(await a.consume('post', subject)).allowed).toBe(false);
    expect(limited(await b.consume('post', subject)).allowed).toBe(false);
  });

  test('concurrent requests never let more than the limit through', async () => {
    await awayFromWindowEdge();
    const a = limiter();
    const b = limiter({ redis: secondConnection });
    const subject = newSubject();
    const decisions = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).consume('send', subject)),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(5);
  });

  test('different subjects and different buckets do not share a budget', async () => {
    const rl = limiter({ now: () => T0 + 1_000 });
    const first = newSubject();
    const second = newSubject();
    for (let i = 0; i < 5; i++) await rl.consume('send', first);
    expect(limited(await rl.consume('send', first)).allowed).toBe(false);
    expect(limited(await rl.consume('send', second)).remaining).toBe(4);
    expect(limited(await rl.consume('post', first)).remaining).toBe(9);
  });

  test('keeps subjects with any characters apart, each in one key segment', async () => {
    const rl = limiter({ now: () => T0 + 1_000 });
    const subjects = ['2001:db8::1', '2001:db8:0:1', '2001%3Adb8%3A%3A1', 'a:b', 'a%003ab', '\uD800'];
    for (const subject of subjects) {
      expect(limited(await rl.consume('read', subject)).remaining, subject).toBe(59);
    }
    const keys = await env.app.redis.keys(`${env.config.REDIS_PREFIX}:rl:read:*`);
    expect(keys).toHaveLength(subjects.length);
    for (const key of keys) expect(key.split(':'), key).toHaveLength(5);
  });

  test('multiplier 0 turns limiting off and writes nothing', async () => {
    const rl = limiter({ multiplier: 0 });
    const subject = newSubject();
    for (let i = 0; i < 50; i++) {
      expect(await rl.consume('send', subject)).toEqual({ allowed: true, disabled: true });
    }
    expect(
      await env.app.redis.keys(`${env.config.REDIS_PREFIX}:rl:send:${encodeSubject(subject)}:*`),
    ).toEqual([]);
  });

  test('multiplier 2 doubles the budget and the announced quota', async () => {
    await awayFromWindowEdge();
    const rl = limiter({ multiplier: 2 });
    const subject = newSubject();
    for (let i = 0; i < 20; i++) {
      const decision = limited(await rl.consume('post', subject));
      expect(decision.allowed).toBe(true);
      expect(decision.policy).toBe('"post";q=20;w=60');
    }
    expect(limited(await rl.consume('post', subject)).allowed).toBe(false);
  });

  test('the budget comes back in the next window', async () => {
    let nowMs = T0 + 59_500;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (let i = 0; i < 10; i++) await rl.consume('post', subject);
    const refused = limited(await rl.consume('post', subject));
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(refused.header).toBe('"post";r=0;t=1');

    nowMs = T0 + 60_000;
    const next = limited(await rl.consume('post', subject));
    expect(next.allowed).toBe(true);
    expect(next.header).toBe('"post";r=9;t=60');
  });

  test('refuses a bad multiplier and an empty subject', async () => {
    expect(() => limiter({ multiplier: -1 })).toThrow(RangeError);
    await expect(limiter().consume('post', '')).rejects.toThrow(/subject is empty/);
  });
});
