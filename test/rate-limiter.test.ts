import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import {
  createRateLimiter,
  encodeSubject,
  type RateLimitDecision,
} from '../src/adapters/redis/rate-limiter.js';
import type { RateLimitBucket } from '../src/domain/rate-limits/rate-limit-policy.js';
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

function limited(decision: RateLimitDecision) {
  if (decision.disabled) throw new Error('expected limits to be on');
  return decision;
}

const keysOf = (bucket: RateLimitBucket, subject: string) => {
  const base = `${env.config.REDIS_PREFIX}:rl:${bucket}:${encodeSubject(subject)}`;
  return { log: `${base}:log`, sum: `${base}:sum` };
};

/** A deterministic pseudo-random sequence (mulberry32), so a failing run can be replayed. */
function seeded(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('createRateLimiter', () => {
  test('refuses the 11th post of a minute, with Retry-After until the oldest post leaves', async () => {
    let nowMs = T0 + 5_000;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (let i = 0; i < 10; i++) {
      expect(limited(await rl.consume('post', subject)).allowed).toBe(true);
      nowMs += 1_000;
    }
    // Posts at 5 s .. 14 s; now 15 s: the first leaves the window at 65 s.
    const refused = limited(await rl.consume('post', subject));
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.retryAfterSeconds).toBe(50);
    expect(refused.resetSeconds).toBe(50);
    expect(refused.header).toBe('"post";r=0;t=50');
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
    let nowMs = T0 + 18_000;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    const first = limited(await rl.consume('post', subject));
    expect(first.policy).toBe('"post";q=10;w=60');
    // t: until the oldest counted post (this one) leaves the window.
    expect(first.header).toBe('"post";r=9;t=60');
    nowMs = T0 + 30_000;
    for (let i = 0; i < 2; i++) await rl.consume('post', subject);
    nowMs = T0 + 35_500;
    expect(limited(await rl.consume('post', subject)).header).toBe('"post";r=6;t=43');

    const signup = limited(await rl.consume('signup', '2001:db8::1'));
    expect(signup.policy).toBe('"signup";q=5;w=3600');
    expect(signup.header).toBe('"signup";r=4;t=3600');
  });

  test('no burst fits across the old minute boundary: 5 sends at 59.9 s, 5 more at 60.1 s are refused', async () => {
    let nowMs = T0 + 59_900;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (let i = 0; i < 5; i++) expect(limited(await rl.consume('send', subject)).allowed).toBe(true);
    nowMs = T0 + 60_100;
    for (let i = 0; i < 5; i++) {
      const refused = limited(await rl.consume('send', subject));
      expect(refused.allowed).toBe(false);
      // The sends of 59.9 s leave at 119.9 s: 59.8 s from now, rounded up.
      expect(refused.retryAfterSeconds).toBe(60);
    }
    nowMs = T0 + 119_899;
    expect(limited(await rl.consume('send', subject)).allowed).toBe(false);
    nowMs = T0 + 119_900;
    const back = limited(await rl.consume('send', subject));
    expect(back.allowed).toBe(true);
    expect(back.remaining).toBe(4);
  });

  test('never lets more than the limit through in any window-length interval, and refuses only when full', async () => {
    const random = seeded(20);
    const windowMs = 60_000;
    const limit = 10;
    let nowMs = T0;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    const allowed: { at: number; cost: number }[] = [];
    const refused: { at: number; cost: number }[] = [];
    for (let i = 0; i < 800; i++) {
      // Bursts and lulls: mostly short steps, now and then a long pause; costs 1 to 4.
      nowMs += random() < 0.1 ? Math.floor(random() * 40_000) : Math.floor(random() * 1_500);
      const cost = 1 + Math.floor(random() * 4);
      const decision = limited(await rl.consume('post', subject, cost));
      (decision.allowed ? allowed : refused).push({ at: nowMs, cost });
      // What the limiter says is left is what the log of allowed hits says.
      expect(decision.remaining, `hit ${i}`).toBe(limit - spentInWindowEndingAt(nowMs));
    }
    function spentInWindowEndingAt(t: number) {
      return allowed.filter((a) => a.at <= t && a.at > t - windowMs).reduce((sum, a) => sum + a.cost, 0);
    }
    // Any interval of one window length holds at most `limit` units: it suffices to check the
    // intervals ending at each allowed hit.
    for (const { at } of allowed)
      expect(spentInWindowEndingAt(at), `at ${at - T0}`).toBeLessThanOrEqual(limit);
    // A refused hit did not fit in the window ending at it.
    for (const { at, cost } of refused) {
      expect(spentInWindowEndingAt(at) + cost, `refused at ${at - T0}`).toBeGreaterThan(limit);
    }
    expect(refused.length).toBeGreaterThan(100);
    expect(allowed.length).toBeGreaterThan(100);
  });

  test('refused requests spend nothing and do not push the budget back', async () => {
    let nowMs = T0 + 1_000;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (let i = 0; i < 10; i++) await rl.consume('repost', subject);
    nowMs = T0 + 30_000;
    for (let i = 0; i < 5; i++) {
      const refused = limited(await rl.consume('repost', subject));
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterSeconds).toBe(31);
    }
    const keys = keysOf('repost', subject);
    expect(await env.app.redis.zcard(keys.log)).toBe(10);
    expect(await env.app.redis.get(keys.sum)).toBe('10');
    // Both keys live one window after the last counted hit, no longer.
    for (const key of [keys.log, keys.sum]) {
      const pttl = await env.app.redis.pttl(key);
      expect(pttl, key).toBeGreaterThan(50_000);
      expect(pttl, key).toBeLessThanOrEqual(60_000);
    }
    nowMs = T0 + 61_000;
    expect(limited(await rl.consume('repost', subject)).remaining).toBe(9);
    expect(await env.app.redis.zcard(keys.log)).toBe(1);
  });

  test('a hit of cost n counts as n requests', async () => {
    let nowMs = T0;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    const first = limited(await rl.consume('read', subject, 20));
    expect(first).toMatchObject({ allowed: true, remaining: 40, header: '"read";r=40;t=60' });
    nowMs = T0 + 10_000;
    expect(limited(await rl.consume('read', subject, 20)).remaining).toBe(20);
    nowMs = T0 + 20_000;
    expect(limited(await rl.consume('read', subject, 19)).remaining).toBe(1);
    expect(limited(await rl.consume('read', subject)).remaining).toBe(0);
    expect(await env.app.redis.get(keysOf('read', subject).sum)).toBe('60');
  });

  test('a hit whose cost exceeds what is left is refused, spends nothing, and is told when it fits', async () => {
    let nowMs = T0;
    const rl = limiter({ now: () => nowMs });
    const subject = newSubject();
    for (const at of [0, 10_000, 20_000]) {
      nowMs = T0 + at;
      await rl.consume('read', subject, 20);
    }
    nowMs = T0 + 30_000;
    // 60 counted, 30 wanted: the hits of 0 s and 10 s must leave first, at 60 s and 70 s.
    const refused = limited(await rl.consume('read', subject, 30));
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 40, resetSeconds: 30 });
    expect(await env.app.redis.get(keysOf('read', subject).sum)).toBe('60');

    nowMs = T0 + 60_000;
    // The first 20 left: 20 fit, 30 not yet (10 s more), and the refusal tells the 20 still left.
    const partly = limited(await rl.consume('read', subject, 30));
    expect(partly).toMatchObject({ allowed: false, remaining: 20, retryAfterSeconds: 10 });
    expect(limited(await rl.consume('read', subject, 20))).toMatchObject({ allowed: true, remaining: 0 });
  });

  test('a cost above the whole limit is refused for a full window and spends nothing', async () => {
    const rl = limiter({ now: () => T0 });
    const subject = newSubject();
    const refused = limited(await rl.consume('send', subject, 6));
    expect(refused).toMatchObject({ allowed: false, remaining: 5, retryAfterSeconds: 60 });
    expect(limited(await rl.consume('send', subject, 5))).toMatchObject({ allowed: true, remaining: 0 });
  });

  test('refuses a cost that is not a positive whole number', async () => {
    const rl = limiter({ now: () => T0 });
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(rl.consume('read', newSubject(), bad), String(bad)).rejects.toThrow(RangeError);
    }
  });

  test('recounts the log when its sum is lost (eviction), and never counts a hit twice', async () => {
    const rl = limiter({ now: () => T0 + 5_000 });
    const subject = newSubject();
    await rl.consume('like', subject, 3);
    await rl.consume('like', subject, 4);
    await env.app.redis.del(keysOf('like', subject).sum);
    expect(limited(await rl.consume('like', subject)).remaining).toBe(30 - 8);
    expect(await env.app.redis.get(keysOf('like', subject).sum)).toBe('8');
  });

  test('two processes on separate connections share one budget', async () => {
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
    const a = limiter();
    const b = limiter({ redis: secondConnection });
    const subject = newSubject();
    const decisions = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).consume('send', subject, 1 + (i % 2))),
    );
    const spent = decisions.reduce((sum, decision, i) => sum + (decision.allowed ? 1 + (i % 2) : 0), 0);
    // Cost-1 hits keep coming until the last unit is gone, whatever the order: exactly 5.
    expect(spent).toBe(5);
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
      expect(limited(await rl.consume('repost', subject)).remaining, subject).toBe(9);
    }
    const keys = subjects.flatMap((subject) => Object.values(keysOf('repost', subject)));
    expect(new Set(keys).size).toBe(subjects.length * 2);
    expect(await env.app.redis.exists(...keys)).toBe(keys.length);
    for (const key of keys) expect(key.split(':'), key).toHaveLength(5);
  });

  test('multiplier 0 turns limiting off and writes nothing', async () => {
    const rl = limiter({ multiplier: 0 });
    const subject = newSubject();
    for (let i = 0; i < 50; i++) {
      expect(await rl.consume('send', subject, 3)).toEqual({ allowed: true, disabled: true });
    }
    expect(
      await env.app.redis.keys(`${env.config.REDIS_PREFIX}:rl:send:${encodeSubject(subject)}:*`),
    ).toEqual([]);
  });

  test('multiplier 2 doubles the budget and the announced quota', async () => {
    const rl = limiter({ multiplier: 2 });
    const subject = newSubject();
    for (let i = 0; i < 20; i++) {
      const decision = limited(await rl.consume('post', subject));
      expect(decision.allowed).toBe(true);
      expect(decision.policy).toBe('"post";q=20;w=60');
    }
    expect(limited(await rl.consume('post', subject)).allowed).toBe(false);
  });

  test('the global sign-up budget is one count for the whole deployment', async () => {
    const rl = limiter({ multiplier: 0.05, now: () => T0 });
    // 100 an hour, times 0.05: 5.
    for (let i = 0; i < 5; i++) expect(limited(await rl.consume('signup_global', 'all')).allowed).toBe(true);
    const refused = limited(await rl.consume('signup_global', 'all'));
    expect(refused).toMatchObject({ allowed: false, limit: 5, retryAfterSeconds: 3_600 });
  });

  test('refuses a bad multiplier and an empty subject', async () => {
    expect(() => limiter({ multiplier: -1 })).toThrow(RangeError);
    await expect(limiter().consume('post', '')).rejects.toThrow(/subject is empty/);
  });
});
