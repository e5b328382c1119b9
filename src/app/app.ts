import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createClickHouse, migrateClickHouse, type ClickHouse } from '../adapters/clickhouse/index.js';
import { createDb, migratePostgres, type Db } from '../adapters/postgres/index.js';
import { createRedis } from '../adapters/redis/index.js';
import { createRateLimiter } from '../adapters/redis/rate-limiter.js';
import { createAccountStore } from '../adapters/postgres/accounts.repository.js';
import { createApiKeyStore } from '../adapters/postgres/api-keys.repository.js';
import { createFollowStore } from '../adapters/postgres/follows.repository.js';
import {
  bootstrapChain,
  createKeystore,
  createWalletProvisioner,
  createRpcClient,
  type Keystore,
  type PlatformChain,
  type RpcClient,
} from '../adapters/solana/index.js';
import type { ApiDeps } from '../api/api-deps.js';
import { createMetrics, type Metrics } from '../api/metrics.js';
import type { Config } from '../config/index.js';
import type { Devstack } from '../devstack/index.js';
import { checkHealth, type HealthReport, type Probe } from '../domain/health/health.service.js';
import { resolveMasterKey } from './master-key.js';

/** Every long-lived client a process holds, built once from the resolved stack. */
export interface App extends ApiDeps {
  config: Config;
  logger: Logger;
  stack: Devstack;
  db: Db;
  redis: Redis;
  clickhouse: ClickHouse;
  metrics: Metrics;
  /** JSON-RPC client of the chain (hot path; web3.js Connection for anything else). */
  rpc: RpcClient;
  keystore: Keystore;
  checkHealth(): Promise<HealthReport>;
  migrate(): Promise<{ postgres: string[]; clickhouse: string[] }>;
  /**
   * Creates or checks the platform's mints, wallets and token accounts (idempotent); memoized:
   * the first call bootstraps, later calls share its result.
   */
  bootstrapChain(): Promise<PlatformChain>;
  close(): Promise<void>;
}

const HEALTH_TIMEOUT_MS = 2_000;

export function openApp(config: Config, logger: Logger, stack: Devstack): App {
  const db = createDb(stack.postgres.url);
  const redis = createRedis(stack.redis.url, 'client');
  if (!stack.clickhouse) throw new Error('openApp needs ClickHouse; this stack was started without it');
  const clickhouseTarget = stack.clickhouse;
  const clickhouse = createClickHouse(clickhouseTarget, config.CLICKHOUSE_DATABASE);
  const metrics = createMetrics();
  const rpc = createRpcClient(stack.solana.url);
  const keystore = createKeystore(resolveMasterKey(config, logger));
  const accounts = createAccountStore(db);
  let bootstrapped: Promise<PlatformChain> | undefined;
  const platform = (): Promise<PlatformChain> => {
    bootstrapped ??= bootstrapChain(
      { rpc, db, keystore, log: (message) => logger.info(`bootstrap: ${message}`) },
      { usdcMint: config.USDC_MINT, nativeMint: config.NATIVE_MINT },
    ).catch((error: unknown) => {
      bootstrapped = undefined; // a failed bootstrap (chain down) is retried on the next call
      throw error;
    });
    return bootstrapped;
  };

  const probes: Array<{ name: string; source: string; probe: Probe }> = [
    { name: 'postgres', source: stack.postgres.source, probe: () => sql`SELECT 1`.execute(db) },
    { name: 'redis', source: stack.redis.source, probe: () => redis.ping() },
    {
      name: 'clickhouse',
      source: clickhouseTarget.kind === 'chdb' ? 'embedded' : 'external',
      probe: async () => {
        // ping() reports failure in its result instead of throwing.
        const result = await clickhouse.client.ping();
        if (!result.success) throw result.error;
      },
    },
  ];
  probes.push({
    name: 'solana',
    source: stack.solana.source,
    probe: () => solanaGetHealth(stack.solana.url),
  });

  return {
    config,
    logger,
    stack,
    db,
    redis,
    clickhouse,
    metrics,
    rpc,
    keystore,
    checkHealth: async () => {
      const report = await checkHealth({ probes, timeoutMs: HEALTH_TIMEOUT_MS });
      metrics.recordHealth(report);
      return report;
    },
    migrate: async () => {
      const postgres = await migratePostgres(db);
      const ch = await migrateClickHouse(clickhouse);
      return { postgres: postgres.applied, clickhouse: ch.applied };
    },
    bootstrapChain: platform,
    accounts,
    apiKeys: createApiKeyStore(db),
    follows: createFollowStore(db),
    wallets: createWalletProvisioner({ rpc, keystore, platform }),
    rateLimiter: createRateLimiter(redis, {
      prefix: config.REDIS_PREFIX,
      multiplier: config.RATE_LIMIT_MULTIPLIER,
    }),
    close: async () => {
      await Promise.allSettled([db.destroy(), redis.quit(), clickhouse.close()]);
    },
  };
}

async function solanaGetHealth(rpcUrl: string): Promise<void> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth' }),
  });
  const body = (await response.json()) as { result?: string; error?: { message: string } };
  if (body.result !== 'ok')
    throw new Error(body.error?.message ?? `getHealth answered ${JSON.stringify(body)}`);
}
