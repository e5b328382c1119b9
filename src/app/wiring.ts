import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  createClickHouse,
  migrateClickHouse,
  unconfiguredClickHouse,
  type ClickHouse,
} from '../adapters/clickhouse/index.js';
import { findApiKeyOn } from '../adapters/postgres/api-keys.repository.js';
import { pingPostgres } from '../adapters/postgres/health-probe.js';
import { createDb, migratePostgres, type Db } from '../adapters/postgres/index.js';
import { webhookBacklog } from '../adapters/postgres/webhook-deliveries.repository.js';
import { CREATOR_FUND_QUEUE } from '../adapters/redis/creator-fund-queue.js';
import { createRedis } from '../adapters/redis/index.js';
import { createLiveEvents } from '../adapters/redis/live-events.js';
import { createPaymentsQueue } from '../adapters/redis/payments-queue.js';
import { createReportsQueue, REPORTS_QUEUE } from '../adapters/redis/reports-queue.js';
import { configuredReportStore } from './reports/configured-report-store.js';
import { queueJobCounter } from '../adapters/redis/queue-counts.js';
import { createRateLimiter } from '../adapters/redis/rate-limiter.js';
import { pingSolana } from '../adapters/solana/index.js';
import type { Config } from '../config/index.js';
import type { HealthReport } from '../domain/health/health.service.js';
import { webhookUrlPolicyOf } from '../domain/webhooks/url-policy.js';
import { createWebhookSecretBox } from '../domain/webhooks/webhook-secret-box.js';
import { createMetrics, QUEUE_STATES, type Metrics } from '../observability/metrics.js';
import type { ApiDeps } from './api-deps.js';
import { createChangeSignals } from './change-signals.js';
import { createHealthCheck } from './health-check.js';
import { httpExposureOf } from './http-exposure.js';
import { cachedApiKeyStore, signallingAccountStore, signallingFollowStore } from './identity-stores.js';
import { publicRpcUrlOf } from './public-rpc-url.js';
import type { ServiceEndpoints } from './service-endpoints.js';
import { sealStoredWebhookSecrets } from './webhooks/seal-stored-secrets.js';
import { createCoreServices, resolveMasterKey, type CoreServices } from './wiring-core.js';

/*
 * The composition root: every long-lived client and shared store of a process is built in this
 * file and its core section (wiring-core.ts), nowhere else in src/app or src/api
 * (test/layering.test.ts holds that). Read it top to bottom; openApp runs in the same order:
 *
 *   1. settings       pool sizes (below); the rest is Config, read once by src/config
 *   2. master key     resolveMasterKey (wiring-core.ts): the keystore and cursor secret derive from it
 *   3. clients        Postgres pools, Redis, its live events and change signals, ClickHouse, the
 *                     RPC and its status poller (createCoreServices, wiring-core.ts)
 *   4. stores         over the write pool (createCoreServices), then the API's caching and
 *                     signalling decorators (openApp), and the read path's deps on the read pool
 *   5. queues         payments, the creator fund's job counts, the rate limiter
 *   6. health         one probe per client
 *   7. the App        what the transports (ApiDeps), workers and tests get, with migrate/close
 *
 * Two ways in. openApp(config, logger, stack) is the whole service: src/service.ts, `npm run
 * migrate`, tests. createCoreServices(config, logger, db, solanaUrl) in wiring-core.ts is the part a
 * process needs beside Postgres and the chain alone: the CLI (src/cli/*-context.ts), the payments
 * threads (workers/payments.thread.ts) and the chaos bench; openApp builds its stores with it too.
 */

// 1. Settings.

/**
 * Connections of the write path's pool. 20: a paid write holds a connection for a few ms, and at
 * hundreds per second 10 queue up.
 */
const WRITE_POOL_SIZE = 20;
/**
 * Connections of the read path's own pool. Under hundreds of paid writes a second the write pool
 * has a queue, and a feed page's refresh (or a key's lookup) waited behind every write queued
 * before it: seconds, while a page is one statement of a millisecond. Reads are single-flight per
 * cached entry, so a few connections serve any number of readers.
 */
const READ_POOL_SIZE = 6;

// 2-7. The whole service.

/** Every long-lived client a process holds, built once from the resolved stack. */
export interface App extends ApiDeps, CoreServices {
  config: Config;
  logger: Logger;
  stack: ServiceEndpoints;
  /** The write path's pool (the read path's is `reads.db`). */
  db: Db;
  redis: Redis;
  clickhouse: ClickHouse;
  metrics: Metrics;
  checkHealth(): Promise<HealthReport>;
  migrate(): Promise<{ postgres: string[]; clickhouse: string[] }>;
  close(): Promise<void>;
}

export function openApp(config: Config, logger: Logger, stack: ServiceEndpoints): App {
  // 2. The master key first: a production start without one fails before any connection opens.
  const masterKey = resolveMasterKey(config, logger);
  const metrics = createMetrics();

  // 3. Clients.
  const db = createDb(stack.postgres.url, { max: WRITE_POOL_SIZE });
  const readDb = createDb(stack.postgres.url, { max: READ_POOL_SIZE });
  const redis = createRedis(stack.redis.url, 'client');
  // Its subscriber connection opens on the first GraphQL subscription or paid write: workers never
  // open it.
  const liveEvents = createLiveEvents({
    url: stack.redis.url,
    prefix: config.REDIS_PREFIX,
    publisher: redis,
    onBadMessage: (channel, err) => logger.warn({ err, channel }, 'live event is not JSON; dropped'),
  });
  const changes = createChangeSignals(liveEvents, logger);
  // No ClickHouse in this stack: an api beside a worker and indexer that hold the embedded one. Its
  // analytics fields answer 503 analytics_unavailable; everything else works.
  const clickhouseTarget = stack.clickhouse;
  const clickhouse = clickhouseTarget
    ? createClickHouse(clickhouseTarget, config.CLICKHOUSE_DATABASE)
    : unconfiguredClickHouse(config.CLICKHOUSE_DATABASE);
  // The RPC client and its status poller are the core's, with the stores over the write pool.
  const core = createCoreServices(config, logger, db, stack.solana.url, masterKey);
  // Webhook signing secrets are sealed with a key derived from the master key, as wallets are.
  const webhookSecrets = createWebhookSecretBox(masterKey);

  // 4. The stores the transports see: read caches and change signals around the core's.
  // Key lookups are on the request path of every read: they use the read pool. (A key's last-use
  // note is written in the background on the write pool: no request waits for it.)
  // READ_CACHE_TTL_MS=0 turns every read cache off, this one included.
  const apiKeys = cachedApiKeyStore(
    { ...core.apiKeys, find: findApiKeyOn(readDb) },
    changes,
    config.READ_CACHE_TTL_MS,
  );
  const accounts = signallingAccountStore(core.accounts, changes);
  const follows = signallingFollowStore(core.follows, changes);
  const reads = {
    db: readDb,
    accounts,
    redis,
    redisPrefix: config.REDIS_PREFIX,
    cursorSecret: core.cursorSecret,
  };

  // 5. Queues.
  const payments = createPaymentsQueue(
    stack.redis.url,
    config.REDIS_PREFIX,
    liveEvents,
    config.PAYMENT_HANDOFF_MS,
  );
  const creatorFundJobs = queueJobCounter(redis, config.REDIS_PREFIX, CREATOR_FUND_QUEUE);
  const reportsQueue = createReportsQueue(stack.redis.url, config.REDIS_PREFIX);
  // Report files: a folder under DATA_DIR, or an S3-compatible bucket when one is configured.
  const reports = configuredReportStore(config);
  const reportStore = reports.store;
  metrics.watchQueue('payments', () => payments.queue.getJobCounts(...QUEUE_STATES));
  metrics.watchQueue(CREATOR_FUND_QUEUE, () => creatorFundJobs.counts(QUEUE_STATES));
  metrics.watchQueue(REPORTS_QUEUE, () => reportsQueue.queue.getJobCounts(...QUEUE_STATES));
  metrics.watchWebhooks(() => webhookBacklog(readDb));
  const rateLimiter = createRateLimiter(redis, {
    prefix: config.REDIS_PREFIX,
    multiplier: config.RATE_LIMIT_MULTIPLIER,
  });

  // 6. Health: one probe per client.
  const checkHealth = createHealthCheck(
    [
      { name: 'postgres', source: stack.postgres.source, probe: () => pingPostgres(db) },
      { name: 'redis', source: stack.redis.source, probe: () => redis.ping() },
      {
        name: 'clickhouse',
        source: !clickhouseTarget ? 'none' : clickhouseTarget.kind === 'chdb' ? 'embedded' : 'external',
        probe: clickhouseTarget
          ? async () => {
              // ping() reports failure in its result instead of throwing.
              const result = await clickhouse.client.ping();
              if (!result.success) throw result.error;
            }
          : undefined,
      },
      { name: 'solana', source: stack.solana.source, probe: () => pingSolana(stack.solana.url) },
    ],
    metrics,
    logger,
  );

  // 7. The App.
  return {
    config,
    logger,
    stack,
    db,
    redis,
    redisPrefix: config.REDIS_PREFIX,
    clickhouse,
    metrics,
    ...core,
    apiKeys,
    accounts,
    follows,
    reads,
    changes,
    readCacheTtlMs: config.READ_CACHE_TTL_MS,
    checkHealth,
    migrate: async () => {
      const postgres = await migratePostgres(db);
      // Secrets stored in clear before they were sealed: the master key is ours, not Postgres'.
      const sealed = await sealStoredWebhookSecrets(db, webhookSecrets);
      if (sealed > 0) logger.info(`sealed the signing secrets of ${sealed} webhook endpoint(s)`);
      const ch = clickhouse.configured ? await migrateClickHouse(clickhouse) : { applied: [] };
      return { postgres: postgres.applied, clickhouse: ch.applied };
    },
    payments,
    reportsQueue,
    reportStore,
    liveEvents,
    writeTimeoutMs: config.WRITE_TIMEOUT_MS,
    publicRpcUrl: publicRpcUrlOf(config.PUBLIC_RPC_URL, stack.solana.url),
    exposure: httpExposureOf(config),
    trustProxyHops: config.TRUST_PROXY_HOPS,
    webhookUrlPolicy: webhookUrlPolicyOf({
      production: config.NODE_ENV === 'production',
      allowLoopback: config.WEBHOOK_ALLOW_LOOPBACK,
    }),
    webhookSecrets,
    rateLimiter,
    // The reverse of the order above: what uses a client stops before the client closes.
    close: async () => {
      core.watcher.close();
      await core.apiKeyUses.close();
      await payments.close();
      await creatorFundJobs.close();
      await reportsQueue.close();
      await changes.close();
      await liveEvents.close();
      await Promise.allSettled([db.destroy(), readDb.destroy(), redis.quit(), clickhouse.close()]);
      await reports.close();
    },
  };
}
