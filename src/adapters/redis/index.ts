export { createRedis, type RedisRole } from './redis.js';
