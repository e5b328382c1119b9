export { startDevstack, type Devstack, type DevstackOptions } from './devstack.js';
export { websocketUrlOf, type SolanaHandle } from './solana.devstack.js';
export type { ServiceHandle, ServiceSource } from './service-handle.js';
export { startEmbeddedPostgres, ensureDatabase, postmasterPid } from './postgres.devstack.js';
export { redisAnswers, startLocalRedis, spawnRedisServer, RedisUnavailableError } from './redis.devstack.js';
