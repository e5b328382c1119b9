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
      /** Requests allowed in one window, after the multiplier. */
      limit: number;
      /** Requests left in this window after this one; 0 once refused. */
      remaining: number;
      /** Whole seconds until the window resets, >= 1. */
      resetSeconds: number;
      /** Only when refused: whole seconds >= 1 to put in `Retry-After` (the time to the window end). */
      retryAfterSeconds?: number;
      /** Value of the `RateLimit-Policy` header. */
      policy: string;
      /** Value of the `RateLimit` header. */
      header: string;
    }
  | { allowed: true; disabled: true };

export interface RateLimiter {
  /** Counts one request of `subject` (account id, client IP, ...) against `bucket`. */
  consume(bucket: RateLimitBucket, subject: string): Promise<RateLimitDecision>;
}

export interface RateLimiterOptions {
  /** The deployment's Redis prefix (REDIS_PREFIX); keys are `${prefix}:rl:...`. */
  prefix: string;
  /** Scales every limit; 0 turns limiting off. See effectiveLimit(). */
  multiplier: number;
  /** Clock in epoch milliseconds, picks the window; @defaultValue Date.now */
  now?: () => number;
}

const COMMAND = 'ledgerfeedRateLimitHit';

/**
 * Counts one hit in a fixed window, atomically: INCR, give the key its expiry when it has none
 * (the first hit of the window, so later hits, refused ones included, never push the window end
 * out), and answer [count, milliseconds the key has left].
 * KEYS[1] the window key; ARGV[1] milliseconds from now to the window end.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  ttl = tonumber(ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {count, ttl}
`;

type HitCommand = (key: string, windowRemainingMs: number) => Promise<unknown>;

/**
 * Fixed-window rate limiter with all state in Redis, so every API process sharing the Redis
 * shares each budget. Windows are aligned to the epoch (index = floor(now / window)), so processes
 * agree on a window without talking to each other; the key carries the index, and expires at the
 * window end as computed from `now`.
 */
export function createRateLimiter(redis: Redis, options: RateLimiterOptions): RateLimiter {
  const now = options.now ?? Date.now;
  // Throws on a bad multiplier at construction rather than on the first request.
  effectiveLimit('post', options.multiplier);
  // ioredis sends EVALSHA and falls back to EVAL when the server lost the script (restart, FLUSH).
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: HIT_SCRIPT });
  const hit = (redis as unknown as Record<typeof COMMAND, HitCommand>)[COMMAND].bind(redis);

  return {
    async consume(bucket, subject) {
      const limit = effectiveLimit(bucket, options.multiplier);
      if (limit === null) return { allowed: true, disabled: true };

      const windowMs = RATE_LIMITS[bucket].windowSeconds * 1_000;
      const nowMs = now();
      const windowIndex = Math.floor(nowMs / windowMs);
      const windowRemainingMs = Math.max(1, (windowIndex + 1) * windowMs - nowMs);
      const key = `${options.prefix}:rl:${bucket}:${encodeSubject(subject)}:${windowIndex}`;

      const [count, ttlMs] = parseHit(await hit(key, windowRemainingMs));
      // The budget comes back when this process moves to the next window or the key expires,
      // whichever is first (they agree unless clocks of processes differ).
      const resetSeconds = Math.max(1, Math.ceil(Math.min(windowRemainingMs, ttlMs) / 1_000));
      const allowed = count <= limit;
      const remaining = Math.max(0, limit - count);
      return {
        allowed,
        disabled: false,
        limit,
        remaining,
        resetSeconds,
        ...(allowed ? {} : { retryAfterSeconds: resetSeconds }),
        policy: `"${bucket}";q=${limit};w=${RATE_LIMITS[bucket].windowSeconds}`,
        header: `"${bucket}";r=${remaining};t=${resetSeconds}`,
      };
    },
  };
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

function parseHit(reply: unknown): [count: number, ttlMs: number] {
  if (Array.isArray(reply) && reply.length === 2) {
    const [count, ttlMs] = reply as unknown[];
    if (typeof count === 'number' && typeof ttlMs === 'number') return [count, ttlMs];
  }
  throw new Error(`unexpected reply from the rate limit script: ${JSON.stringify(reply)}`);
}
