import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  effectiveLimit,
  RATE_LIMITS,
  type RateLimitBucket,
} from '../../domain/rate-limits/rate-limit-policy.js';

/**
 * What one request learns from the limiter. When limits are on it carries the two response header
 * values of the IETF draft "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers,
 * structured-field form): `RateLimit-Policy: "post";q=10;w=60` and `RateLimit: "post";r=7;t=42`.
 * When limits are off (multiplier 0) there is nothing to announce and no header is sent.
 */
export type RateLimitDecision =
  | {
      allowed: boolean;
      disabled: false;
      /** Units (requests, or cost units) allowed in any one window, after the multiplier. */
      limit: number;
      /**
       * Units left in the window ending now, after this hit if it was counted (a refused hit of
       * cost 1 sees 0; a refused costlier hit sees what is left, which was not enough).
       */
      remaining: number;
      /**
       * Whole seconds >= 1 until the oldest counted hit leaves the window, i.e. until `remaining`
       * next grows: the `t` of the RateLimit header.
       */
      resetSeconds: number;
      /**
       * Only when refused: whole seconds >= 1 to put in `Retry-After`, the time until enough older
       * hits have left the window for this hit's cost to fit (for cost 1 it equals resetSeconds).
       */
      retryAfterSeconds?: number;
      /** Value of the `RateLimit-Policy` header. */
      policy: string;
      /** Value of the `RateLimit` header. */
      header: string;
    }
  | { allowed: true; disabled: true };

export interface RateLimiter {
  /**
   * Counts one hit of `subject` (account id, client IP, ...) against `bucket`, worth `cost` units
   * (a positive whole number; @defaultValue 1, one request). A hit whose cost does not fit in what
   * is left is refused and spends nothing. A cost above the bucket's whole `limit` can never fit:
   * it is refused with Retry-After of one window, so callers that price by cost should refuse such
   * a hit themselves with a clearer error.
   */
  consume(bucket: RateLimitBucket, subject: string, cost?: number): Promise<RateLimitDecision>;
  /**
   * Whether hits of `bucket` are counted at all (false when RATE_LIMIT_MULTIPLIER is 0: consume()
   * would answer `disabled`): an answer given from memory skips the call when they are not.
   */
  counts(bucket: RateLimitBucket): boolean;
}

export interface RateLimiterOptions {
  /** The deployment's Redis prefix (REDIS_PREFIX); keys are `${prefix}:rl:...`. */
  prefix: string;
  /** Scales every limit; 0 turns limiting off. See effectiveLimit(). */
  multiplier: number;
  /** Clock in epoch milliseconds, the time of each hit; @defaultValue Date.now */
  now?: () => number;
}

const COMMAND = 'ledgerfeedRateLimitSlide';

/**
 * A sliding log: at most `limit` units in ANY interval of one window length, atomically.
 * KEYS[1] the log, a sorted set of the counted hits (score: time in ms, member: "<cost>:<unique>");
 * KEYS[2] the sum of the costs in the log, kept beside it so that a hit costs O(log n) and not a
 * walk over the log. ARGV: now (ms), window (ms), limit, cost, member.
 *
 * Each hit first drops the hits that left the window (those at or before now - window: a hit at t
 * counts over [t, t + window)), subtracting their costs. A hit that does not fit is refused and
 * writes nothing, so refused hits never push anything out. Replies
 * {allowed 0|1, units counted after this hit, ms until the oldest hit leaves, ms until this cost
 * fits (refused only)}.
 *
 * Should the sum be lost apart from the log (eviction), it is recounted from the log; the two
 * expire together one window after the last counted hit, when every hit in them has left.
 */
const SLIDE_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local cutoff = now - window
local function costOf(member) return tonumber(string.match(member, '^%d+')) end

local total = tonumber(redis.call('GET', KEYS[2]))
if total == nil then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
  total = 0
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do total = total + costOf(member) end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('SET', KEYS[2], total, 'PX', ttl) end
else
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
  if #gone > 0 then
    for _, member in ipairs(gone) do total = total - costOf(member) end
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
    -- Written now, not only with the next counted hit: a refused hit may be all that follows.
    redis.call('SET', KEYS[2], total, 'KEEPTTL')
  end
end

if total + cost > limit then
  local fitsMs = window
  if cost <= limit then
    -- The oldest hits leave first; each costs >= 1, so at most "need" of them must leave.
    local need = total + cost - limit
    local oldest = redis.call('ZRANGE', KEYS[1], 0, need - 1, 'WITHSCORES')
    local freed = 0
    for i = 1, #oldest, 2 do
      freed = freed + costOf(oldest[i])
      if freed >= need then
        fitsMs = tonumber(oldest[i + 1]) + window - now
        break
      end
    end
  end
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local resetMs = window
  if first[2] then resetMs = tonumber(first[2]) + window - now end
  return {0, total, resetMs, fitsMs}
end

redis.call('ZADD', KEYS[1], now, ARGV[5])
total = total + cost
redis.call('SET', KEYS[2], total, 'PX', window)
redis.call('PEXPIRE', KEYS[1], window)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {1, total, tonumber(first[2]) + window - now, 0}
`;

type SlideCommand = (
  logKey: string,
  sumKey: string,
  nowMs: number,
  windowMs: number,
  limit: number,
  cost: number,
  member: string,
) => Promise<unknown>;

/**
 * Sliding-log rate limiter with all state in Redis, so every API process sharing the Redis shares
 * each budget. Unlike clock-aligned fixed windows (what this was before issue 20), no burst fits
 * across a window boundary: "5 sends per minute" holds for every minute, not 5 at 0:59.9 and 5 more
 * at 1:00.1. A sliding log is the only exact way to say that (a sliding-window counter estimates
 * the previous window's share and can let more through; GCRA allows a full burst and then the
 * steady rate, up to 2 x limit - 1 in one window). Its cost is one sorted-set entry per counted
 * hit (at most `limit` per subject and bucket) and O(log n) per hit; see docs/security.md for the
 * figures.
 */
export function createRateLimiter(redis: Redis, options: RateLimiterOptions): RateLimiter {
  const now = options.now ?? Date.now;
  // Throws on a bad multiplier at construction rather than on the first request.
  effectiveLimit('post', options.multiplier);
  // ioredis sends EVALSHA and falls back to EVAL when the server lost the script (restart, FLUSH).
  redis.defineCommand(COMMAND, { numberOfKeys: 2, lua: SLIDE_SCRIPT });
  const slide = (redis as unknown as Record<typeof COMMAND, SlideCommand>)[COMMAND].bind(redis);
  // Log members must be unique across processes and hits: a random id per limiter and a counter.
  const instance = randomBytes(6).toString('base64url');
  let hits = 0;

  return {
    counts: (bucket) => effectiveLimit(bucket, options.multiplier) !== null,
    async consume(bucket, subject, cost = 1) {
      if (!Number.isSafeInteger(cost) || cost < 1) {
        throw new RangeError(`rate limit cost must be a positive whole number, got ${cost}`);
      }
      const limit = effectiveLimit(bucket, options.multiplier);
      if (limit === null) return { allowed: true, disabled: true };

      const { windowSeconds } = RATE_LIMITS[bucket];
      const key = `${options.prefix}:rl:${bucket}:${encodeSubject(subject)}`;
      hits = (hits + 1) % Number.MAX_SAFE_INTEGER;
      const member = `${cost}:${instance}${hits.toString(36)}`;
      const reply = await slide(
        `${key}:log`,
        `${key}:sum`,
        now(),
        windowSeconds * 1_000,
        limit,
        cost,
        member,
      );
      const [allowedFlag, counted, resetMs, fitsMs] = parseSlide(reply);

      const allowed = allowedFlag === 1;
      const remaining = Math.max(0, limit - counted);
      const resetSeconds = wholeSeconds(resetMs);
      return {
        allowed,
        disabled: false,
        limit,
        remaining,
        resetSeconds,
        ...(allowed ? {} : { retryAfterSeconds: wholeSeconds(fitsMs) }),
        policy: `"${bucket}";q=${limit};w=${windowSeconds}`,
        header: `"${bucket}";r=${remaining};t=${resetSeconds}`,
      };
    },
  };
}

/** Milliseconds as whole seconds rounded up, at least 1 (a hit from a process whose clock runs ahead can be "in the future"). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1_000));
}

/**
 * Makes any subject safe as one key segment, injectively: letters, digits, '.', '_' and '-' stay,
 * every other UTF-16 code unit (':' of IPv6 included, '%' itself too) becomes %XXXX. Unlike
 * encodeURIComponent it cannot throw on a lone surrogate.
 */
export function encodeSubject(subject: string): string {
  if (subject === '') throw new Error('rate limit subject is empty');
  return subject.replace(
    /[^A-Za-z0-9._-]/g,
    (char) => `%${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function parseSlide(reply: unknown): [allowed: number, counted: number, resetMs: number, fitsMs: number] {
  if (Array.isArray(reply) && reply.length === 4 && reply.every((value) => typeof value === 'number')) {
    return reply as [number, number, number, number];
  }
  throw new Error(`unexpected reply from the rate limit script: ${JSON.stringify(reply)}`);
}
