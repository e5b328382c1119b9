import type { Redis } from 'ioredis';

export interface SlidingWindowSlot {
  allowed: boolean;
  /** Only when refused: milliseconds until the oldest counted use leaves the window (>= 1). */
  retryAfterMs: number;
}

/**
 * Takes one use of at most `limit` per any `windowMs`, atomically, as a log of use times in a
 * sorted set: drop the uses that left the window, refuse when `limit` remain, else record this
 * one. No burst fits across a window boundary: for something that mints money, "3 per 10 minutes"
 * must hold for every 10 minutes. The API's limiter (rate-limiter.ts) is the same idea with costs
 * and a running sum; this one stays apart because its one user wants nothing of that.
 * KEYS[1] the log; ARGV now (ms), window (ms), limit, a member unique to this use.
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}
`;

export async function takeSlidingWindowSlot(
  redis: Redis,
  key: string,
  options: { limit: number; windowMs: number; nowMs: number },
): Promise<SlidingWindowSlot> {
  const { limit, windowMs, nowMs } = options;
  // Two uses in the same millisecond are two members: the random part keeps them apart.
  const member = `${nowMs}:${Math.random().toString(36).slice(2)}`;
  // EVAL, not a defined command (EVALSHA): its one user, the faucet, runs a few times an hour.
  const [allowed, retryAfterMs] = (await redis.eval(TAKE_SCRIPT, 1, key, nowMs, windowMs, limit, member)) as [
    number,
    number,
  ];
  return { allowed: allowed === 1, retryAfterMs: allowed === 1 ? 0 : Math.max(1, retryAfterMs) };
}
