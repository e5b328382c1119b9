import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRedis } from '../src/adapters/redis/index.js';
import { loadConfig } from '../src/config/index.js';
import { freePort, freePortPair } from '../src/devstack/free-port.js';
import { createLogger } from '../src/logger.js';
import { runService, type RunningService } from '../src/service.js';
import type { RoleName } from '../workers/role.js';

/**
 * The real service for a benchmark, as `npm start` runs it on the embedded stack: a fresh temporary
 * DATA_DIR, free ports, a Redis prefix of its own, rate limits off. `stop` stops it and deletes the
 * folder and, on a shared Redis, the keys under its prefix (a write-path run leaves ~5,000: its
 * completed jobs are kept a day). `env` adds or replaces settings (READ_CACHE_TTL_MS=0 for a bench
 * of cache misses).
 */
export async function startBenchService(
  roles: RoleName[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ service: RunningService; stop: () => Promise<void> }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ledgerfeed-bench-'));
  await chmod(dataDir, 0o755); // the embedded Postgres may run as the OS user `postgres`
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    LOCALNET_PORT: String(await freePortPair()),
    REDIS_PREFIX: `bench${randomBytes(4).toString('hex')}`,
    RATE_LIMIT_MULTIPLIER: '0',
    LOG_LEVEL: 'warn',
    // To compare settling in a thread of its own with settling on the event loop, one run each.
    ...(process.env.PAYMENT_THREADS ? { PAYMENT_THREADS: process.env.PAYMENT_THREADS } : {}),
    // To compare hand-off gatherings (the cost of a paid write against its wait), one run each.
    ...(process.env.PAYMENT_HANDOFF_MS ? { PAYMENT_HANDOFF_MS: process.env.PAYMENT_HANDOFF_MS } : {}),
    ...env,
  });
  const service = await runService(config, createLogger(config), roles);
  return {
    service,
    stop: async () => {
      const redis = service.app.stack.redis;
      await service.stop();
      await rm(dataDir, { recursive: true, force: true }).catch(() => {});
      if (redis.source !== 'embedded') await deleteKeys(redis.url, `${config.REDIS_PREFIX}:*`);
    },
  };
}

async function deleteKeys(url: string, pattern: string): Promise<void> {
  const client = createRedis(url, 'client');
  try {
    for await (const keys of client.scanStream({ match: pattern, count: 1_000 }) as AsyncIterable<string[]>) {
      if (keys.length > 0) await client.unlink(...keys);
    }
  } catch (error) {
    console.error(`could not delete the bench's Redis keys (${pattern}): ${String(error)}`);
  } finally {
    client.disconnect();
  }
}
