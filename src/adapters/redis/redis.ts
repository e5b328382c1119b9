import { Redis } from 'ioredis';

/**
 * Two kinds of connection, as BullMQ wants them: workers block and must retry forever
 * (`maxRetriesPerRequest: null`); request-path clients fail fast so an API call or a health check
 * never hangs on a dead Redis.
 */
export type RedisRole = 'worker' | 'client';

export function createRedis(url: string, role: RedisRole): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    connectTimeout: 5_000,
    // Reconnect with a capped backoff; the health check reports the outage meanwhile.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // ioredis emits 'error' on every failed reconnect; unhandled, that would crash the process.
  redis.on('error', () => {});
  return redis;
}
