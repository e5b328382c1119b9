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
import { createRedis } from '../adapters/redis/index.js';
import { createLiveEvents } from '../adapters/redis/live-events.js';
import { createPaymentsQueue } from '../adapters/redis/payments-queue.js';
import { CREATOR_FUND_QUEUE } from '../adapters/redis/creator-fund-queue.js';
import { queueJobCounter } from '../adapters/redis/queue-counts.js';
import { createRateLimiter } from '../adapters/redis/rate-limiter.js';
import type { ApiDeps, HttpExposure } from './api-deps.js';
import { createMetrics, QUEUE_STATES, type Metrics } from '../observability/metrics.js';
import type { Config } from '../config/index.js';
import { cachedHealthCheck } from '../domain/health/health-cache.js';
import { checkHealth, type HealthReport, type Probe } from '../domain/health/health.service.js';
import { redactUrl, redactUrls } from '../url-redaction.js';
import { webhookUrlPolicyOf } from '../domain/webhooks/url-policy.js';
import { cachedApiKeyStore, signallingAccountStore, signallingFollowStore } from './identity-stores.js';
import { createChangeSignals } from './change-signals.js';
import { createCoreServices, type CoreServices } from './core-services.js';
import type { ServiceEndpoints } from './service-endpoints.js';

/** Every long-lived client a process holds, built once from the resolved stack. */
export interface App extends ApiDeps, CoreServices {
  config: Config;
  logger: Logger;
  stack: ServiceEndpoints;
  db: Db;
  redis: Redis;
  clickhouse: ClickHouse;
  metrics: Metrics;
  checkHealth(): Promise<HealthReport>;
  migrate(): Promise<{ postgres: string[]; clickhouse: string[] }>;
  close(): Promise<void>;
}

const HEALTH_TIMEOUT_MS = 2_000;
/** Connections of the read path's pool (readDb). */
const READ_POOL_SIZE = 6;
/**
 * A health report is answered again for this long instead of probing anew: /healthz and the
 * public GraphQL `health` field then cost at most four probes per interval however many callers
 * (or aliases in one query) ask. Shorter than any poller's period (compose, Prometheus: >= 5 s).
 */
const HEALTH_MAX_AGE_MS = 2_000;

export function openApp(config: Config, logger: Logger, stack: ServiceEndpoints): App {
  // 20: a paid write holds a connection for a few ms, and at hundreds per second 10 queue up.
  const db = createDb(stack.postgres.url, { max: 20 });
  // The read path's own connections. Under hundreds of paid writes a second the pool above has a
  // queue, and a feed page's refresh (or a key's lookup) waited behind every write queued before it:
  // seconds, while a page is one statement of a millisecond. Reads are single-flight per cached
  // entry, so a few connections serve any number of readers.
  const readDb = createDb(stack.postgres.url, { max: READ_POOL_SIZE });
  // Key lookups are on the request path of every read: they use it too. (A key's last-use note is
  // written in the background on the pool above: no request waits for it.)
  const findApiKey = findApiKeyOn(readDb);
  const redis = createRedis(stack.redis.url, 'client');
  // No ClickHouse in this stack: an api beside a worker and indexer that hold the embedded one. Its
  // analytics fields answer 503 analytics_unavailable; everything else works.
  const clickhouseTarget = stack.clickhouse;
  const clickhouse = clickhouseTarget
    ? createClickHouse(clickhouseTarget, config.CLICKHOUSE_DATABASE)
    : unconfiguredClickHouse(config.CLICKHOUSE_DATABASE);
  const metrics = createMetrics();
  const core = createCoreServices(config, logger, db, stack.solana.url);
  // Its subscriber connection opens on the first GraphQL subscription or paid write: workers never
  // open it.
  const liveEvents = createLiveEvents({
    url: stack.redis.url,
    prefix: config.REDIS_PREFIX,
    publisher: redis,
    onBadMessage: (channel, err) => logger.warn({ err, channel }, 'live event is not JSON; dropped'),
  });
  const payments = createPaymentsQueue(
    stack.redis.url,
    config.REDIS_PREFIX,
    liveEvents,
    config.PAYMENT_HANDOFF_MS,
  );
  const changes = createChangeSignals(liveEvents, logger);
  const creatorFundJobs = queueJobCounter(redis, config.REDIS_PREFIX, CREATOR_FUND_QUEUE);
  metrics.watchQueue('payments', () => payments.queue.getJobCounts(...QUEUE_STATES));
  metrics.watchQueue(CREATOR_FUND_QUEUE, () => creatorFundJobs.counts(QUEUE_STATES));

  const probes: Array<{ name: string; source: string; probe: Probe | undefined }> = [
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
  ];
  probes.push({
    name: 'solana',
    source: stack.solana.source,
    probe: () => solanaGetHealth(stack.solana.url),
  });
  // The probes' own errors name hosts and URLs, so clients see only a summary: the detail is
  // logged here, once when a dependency goes down (not on every probe while it stays down).
  const down = new Set<string>();
  const logHealthChanges = (report: HealthReport) => {
    for (const dependency of report.dependencies) {
      if (dependency.status === 'down' && !down.has(dependency.name)) {
        down.add(dependency.name);
        logger.warn(
          { dependency: dependency.name, latencyMs: dependency.latencyMs },
          `health: ${dependency.name} is down: ${redactUrls(dependency.detail ?? dependency.error ?? 'failed')}`,
        );
      } else if (dependency.status === 'up' && down.delete(dependency.name)) {
        logger.info({ dependency: dependency.name }, `health: ${dependency.name} is up again`);
      }
    }
  };
  const health = cachedHealthCheck(
    async () => {
      const report = await checkHealth({ probes, timeoutMs: HEALTH_TIMEOUT_MS });
      metrics.recordHealth(report);
      logHealthChanges(report);
      return report;
    },
    { maxAgeMs: HEALTH_MAX_AGE_MS },
  );

  return {
    config,
    logger,
    stack,
    db,
    readDb,
    redis,
    redisPrefix: config.REDIS_PREFIX,
    clickhouse,
    metrics,
    ...core,
    // READ_CACHE_TTL_MS=0 turns every read cache off, this one included.
    apiKeys: cachedApiKeyStore({ ...core.apiKeys, find: findApiKey }, changes, config.READ_CACHE_TTL_MS),
    accounts: signallingAccountStore(core.accounts, changes),
    follows: signallingFollowStore(core.follows, changes),
    changes,
    readCacheTtlMs: config.READ_CACHE_TTL_MS,
    checkHealth: health,
    migrate: async () => {
      const postgres = await migratePostgres(db);
      const ch = clickhouse.configured ? await migrateClickHouse(clickhouse) : { applied: [] };
      return { postgres: postgres.applied, clickhouse: ch.applied };
    },
    payments,
    liveEvents,
    writeTimeoutMs: config.WRITE_TIMEOUT_MS,
    publicRpcUrl: publicRpcUrlOf(config.PUBLIC_RPC_URL, stack.solana.url),
    exposure: httpExposureOf(config),
    trustProxyHops: config.TRUST_PROXY_HOPS,
    webhookUrlPolicy: webhookUrlPolicyOf({
      production: config.NODE_ENV === 'production',
      allowLoopback: config.WEBHOOK_ALLOW_LOOPBACK,
    }),
    rateLimiter: createRateLimiter(redis, {
      prefix: config.REDIS_PREFIX,
      multiplier: config.RATE_LIMIT_MULTIPLIER,
    }),
    close: async () => {
      core.watcher.close();
      await core.apiKeyUses.close();
      await payments.close();
      await creatorFundJobs.close();
      await changes.close();
      await liveEvents.close();
      await Promise.allSettled([db.destroy(), readDb.destroy(), redis.quit(), clickhouse.close()]);
    },
  };
}

/**
 * What the HTTP server shows beyond API keys. Production is closed by default: no cross-origin
 * pages (the dashboards are same-origin), no GraphiQL; development lets any origin's page call
 * /graphql (a front end on its own dev server) and serves GraphiQL.
 */
export function httpExposureOf(config: Config): HttpExposure {
  const production = config.NODE_ENV === 'production';
  return {
    corsOrigins: config.CORS_ORIGINS ?? (production ? [] : ['*']),
    metricsToken: config.METRICS_TOKEN,
    graphiql: !production,
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

/**
 * The RPC URL the dashboards put in block-explorer links, which every dashboard user reads. Set
 * (PUBLIC_RPC_URL), it is the operator's choice; else the service's own RPC URL, with any secret in
 * it hidden: a provider's key in SOLANA_RPC_URL must not reach a creator's browser (the link then
 * needs PUBLIC_RPC_URL to work, which the README says).
 */
export function publicRpcUrlOf(publicRpcUrl: string | undefined, rpcUrl: string): string {
  return publicRpcUrl ?? redactUrl(rpcUrl);
}
