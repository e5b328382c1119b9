import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { LiveEvents } from '../adapters/redis/live-events.js';
import type { ClickHouse } from '../adapters/clickhouse/index.js';
import type { Db } from '../adapters/postgres/db.js';
import type { PaymentsQueue } from '../adapters/redis/payments-queue.js';
import type { ReportsQueue } from '../adapters/redis/reports-queue.js';
import type { RateLimiter } from '../adapters/redis/rate-limiter.js';
import type { ChangeSignals } from './change-signals.js';
import type { ReportStore } from './reports/report-store.js';
import type { WritePathDeps } from './write-path/write-path-deps.js';
import type { AccountStore, WalletProvisioner } from '../domain/accounts/accounts.service.js';
import type { ApiKeyStore } from '../domain/auth/api-keys.service.js';
import type { FollowStore } from '../domain/follows/follows.service.js';
import type { LedgerStore } from '../domain/ledger/ledger-store.port.js';
import type { HealthReport } from '../domain/health/health.service.js';
import type { Metrics } from '../observability/metrics.js';
import type { WebhookUrlPolicy } from '../domain/webhooks/url-policy.js';
import type { WebhookSecretBox } from '../domain/webhooks/webhook-secret-box.js';
import type { HostResolver } from '../adapters/http/webhook-address.js';

/** From CORS_ORIGINS, METRICS_TOKEN and NODE_ENV (src/app/http-exposure.ts). */
export interface HttpExposure {
  /** Origins whose pages may call /graphql from a browser; `*` allows any, empty none. */
  corsOrigins: readonly string[];
  /** Bearer token /metrics asks for; undefined: only loopback clients are answered. */
  metricsToken: string | undefined;
  /** Serve the GraphiQL page to browsers at /graphql (never in production). */
  graphiql: boolean;
}

/**
 * What the read path's services take (feed pages, one post, timelines, replies, trending, the
 * accounts and likes shown beside posts), with `db` the read path's own pool. Built once by the
 * wiring (src/app/wiring.ts) and handed to the transports as ApiDeps.reads.
 */
export interface ReadDeps {
  /** The read pool: reads never queue behind the write path's statements for a connection. */
  db: Db;
  accounts: AccountStore;
  redis: Redis;
  redisPrefix: string;
  cursorSecret: string;
}

/** What the transports need from the composition root (src/app/wiring.ts). */
export interface ApiDeps extends WritePathDeps {
  logger: Logger;
  metrics: Metrics;
  /** Analytics and reconciliation reads. */
  clickhouse: ClickHouse;
  checkHealth(): Promise<HealthReport>;
  accounts: AccountStore;
  apiKeys: ApiKeyStore;
  follows: FollowStore;
  ledger: LedgerStore;
  wallets: WalletProvisioner;
  rateLimiter: RateLimiter;
  payments: PaymentsQueue;
  /** Report runs' jobs (job id = run id): the API queues, the worker role makes them. */
  reportsQueue: ReportsQueue;
  /** Where report files are written and read (a folder under DATA_DIR). */
  reportStore: ReportStore;
  /** HMAC key of opaque pagination cursors. */
  cursorSecret: string;
  /** HMAC key of report files' download links (derived from the master key for this use alone). */
  reportLinkKey: Buffer;
  /** The trending snapshot lives in Redis (src/app/feed/trending.ts). */
  redis: Redis;
  /** REDIS_PREFIX: this deployment's Redis key prefix. */
  redisPrefix: string;
  /** Redis pub/sub of the GraphQL subscriptions (src/app/live-updates.ts). */
  liveEvents: LiveEvents;
  /**
   * The read path's deps (feed pages, post and timeline reads, REST and GraphQL alike): the same
   * stores, with a small Postgres pool of their own as `db` (src/app/wiring.ts). `db` above is the
   * write path's pool.
   */
  reads: ReadDeps;
  /** Tells the read caches of every process that what they hold may be out of date. */
  changes: ChangeSignals;
  /** READ_CACHE_TTL_MS: how long a cached read may live without a change signal (0: no caching). */
  readCacheTtlMs: number;
  /** WRITE_TIMEOUT_MS: how long a paid write waits for the cluster to execute it before answering 202. */
  writeTimeoutMs: number;
  /** PUBLIC_RPC_URL: the cluster's JSON-RPC as a browser reaches it (block-explorer links). */
  publicRpcUrl: string;
  /** Who may reach what over HTTP besides API keys: browsers' origins, /metrics, GraphiQL. */
  exposure: HttpExposure;
  /** TRUST_PROXY_HOPS: how many proxies' X-Forwarded-For entries to believe (0: none). */
  trustProxyHops: number;
  /** Which webhook URLs may be registered (WEBHOOK_ALLOW_LOOPBACK, NODE_ENV). */
  webhookUrlPolicy: WebhookUrlPolicy;
  /** Seals webhook secrets with the master key before they are stored, and opens them to sign. */
  webhookSecrets: WebhookSecretBox;
  /** Resolves webhook hosts at registration; tests inject names. @defaultValue the OS resolver */
  resolveHost?: HostResolver;
}
