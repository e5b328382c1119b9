import { z } from 'zod';

/**
 * Every environment variable Ledgerfeed reads, with its default. The variable table of
 * The README's configuration table and docker-compose.yml are checked against this object by
 * test/config-docs.test.ts: add a variable here first, then document it there.
 */
const url = (protocols: readonly string[]) =>
  z
    .string()
    .trim()
    .refine(
      (value) => {
        try {
          return protocols.includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { message: `expected a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
    );

const port = z.coerce
  .number({ message: 'expected a port number' })
  .int({ message: 'expected an integer port from 1 to 65535' })
  .min(1, { message: 'expected an integer port from 1 to 65535' })
  .max(65535, { message: 'expected an integer port from 1 to 65535' });

const base58Address = z
  .string()
  .trim()
  .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, { message: 'expected a base58 Solana address' });

/** `scheme://host[:port]` and nothing else: what a browser sends in its Origin header. */
const isOrigin = (value: string) => {
  try {
    const parsed = new URL(value);
    return ['http:', 'https:'].includes(parsed.protocol) && parsed.origin === value;
  } catch {
    return false;
  }
};

/** An empty string counts as unset, as a shell `VAR=` or a blank compose entry means. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

export const envSchema = z.object({
  NODE_ENV: z
    .enum(['development', 'test', 'production'], { message: 'expected development, test or production' })
    .default('development'),
  /** HTTP port of the API role (REST, GraphQL, /healthz, /metrics). */
  PORT: port.default(3000),
  /**
   * Port of /healthz and /metrics in a process without the API role (`--only worker`, `indexer`):
   * every role can be probed and scraped. Unset: PORT. 0 picks a free port (printed at start).
   * A process with the API serves both on PORT and ignores this.
   */
  HEALTH_PORT: optional(
    z.coerce
      .number({ message: 'expected a port number' })
      .int({ message: 'expected an integer port from 0 to 65535' })
      .min(0, { message: 'expected an integer port from 0 to 65535' })
      .max(65535, { message: 'expected an integer port from 0 to 65535' }),
  ),
  /** Interface the API binds to; compose sets 0.0.0.0 inside containers. */
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  /**
   * Web origins whose pages may call /graphql from a browser (comma-separated, e.g.
   * `https://app.example.com,https://admin.example.com`; `*` for any). Unset: any origin outside
   * production, none in production (same-origin pages such as /dashboard need no CORS).
   */
  CORS_ORIGINS: optional(
    z
      .string()
      .trim()
      .transform((value) => value.split(',').map((origin) => origin.trim().replace(/\/$/, '')))
      .refine((origins) => origins.every((origin) => origin === '*' || isOrigin(origin)), {
        message: 'expected * or comma-separated origins such as https://app.example.com',
      }),
  ),
  /**
   * Bearer token that /metrics asks for (`Authorization: Bearer <token>`, at least 16 characters).
   * Unset: /metrics answers only clients connecting from the machine itself (loopback).
   */
  METRICS_TOKEN: optional(z.string().trim().min(16, { message: 'expected at least 16 characters' })),
  /** Folder for everything the embedded services keep: postgres/, clickhouse/, redis/, stack.json. */
  DATA_DIR: z.string().trim().min(1, { message: 'expected a folder path' }).default('.data'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'expected one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  /**
   * The bucket report files are written to (src/adapters/files/s3-report-store.ts). Unset: a folder,
   * DATA_DIR/reports. Every worker and API process of a deployment must name the same store.
   */
  REPORT_S3_BUCKET: optional(
    z
      .string()
      .trim()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
        message: 'expected a bucket name: 3-63 lowercase letters, digits, dots or hyphens',
      }),
  ),
  /**
   * An S3-compatible service's URL (MinIO, Cloudflare R2, Ceph, ...), addressed path-style
   * (`<endpoint>/<bucket>/<key>`). Unset: AWS S3.
   */
  REPORT_S3_ENDPOINT: optional(url(['http:', 'https:'])),
  /** The bucket's region, as requests are signed for it. @defaultValue us-east-1 */
  REPORT_S3_REGION: z
    .string()
    .trim()
    .regex(/^[a-z0-9-]{1,32}$/, { message: 'expected a region such as us-east-1 (or auto)' })
    .default('us-east-1'),
  /** Put before every report file's key in the bucket, e.g. `ledgerfeed/reports/`. @defaultValue '' */
  REPORT_S3_PREFIX: z
    .string()
    .trim()
    .regex(/^(?:[A-Za-z0-9!_.*'()-]+\/)*$/, {
      message: "expected empty, or folder names each ending with / (letters, digits, !_.*'()-)",
    })
    .default(''),
  /**
   * The bucket's access key id, with REPORT_S3_SECRET_ACCESS_KEY. Unset (both): the AWS SDK's
   * default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an instance or task role).
   */
  REPORT_S3_ACCESS_KEY_ID: optional(z.string().trim().min(1)),
  /** The secret of REPORT_S3_ACCESS_KEY_ID. */
  REPORT_S3_SECRET_ACCESS_KEY: optional(z.string().trim().min(1)),
  /** Unset: embedded Postgres under DATA_DIR/postgres. */
  DATABASE_URL: optional(url(['postgres:', 'postgresql:'])),
  /** Unset: 127.0.0.1:6379 if it answers, else redis-server from PATH on a free port. */
  REDIS_URL: optional(url(['redis:', 'rediss:'])),
  /** Prefix of every Redis key and BullMQ queue this deployment owns (no ':' — BullMQ rule). */
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, { message: 'expected 1-32 letters, digits, - or _' })
    .default('lf'),
  /** Unset: embedded ClickHouse (chdb) under DATA_DIR/clickhouse. */
  CLICKHOUSE_URL: optional(url(['http:', 'https:'])),
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, { message: 'expected a lowercase identifier (a-z, 0-9, _)' })
    .default('ledgerfeed'),
  /** Unset: the embedded localnet (arrives with the localnet issue). */
  SOLANA_RPC_URL: optional(url(['http:', 'https:'])),
  /**
   * Status poll of the transactions in flight, in ms. Unset: 100 on our own validators (the
   * localnet, compose's), 1000 on devnet and testnet, whose public RPCs rate-limit.
   */
  SOLANA_POLL_MS: optional(z.coerce.number().int().min(10).max(60_000)),
  /**
   * Priority fee of every platform transaction, in micro-lamports per compute unit (0: none).
   * Unset: none on our own validators, 1,000 on devnet and testnet.
   */
  SOLANA_PRIORITY_FEE: optional(z.coerce.number().int().min(0).max(100_000_000)),
  /** HTTP requests per second to the RPC at most (0: no cap). Unset: none on our validators, 8 elsewhere. */
  SOLANA_MAX_RPS: optional(z.coerce.number().int().min(0).max(100_000)),
  /**
   * The cluster's JSON-RPC as a browser reaches it, for the dashboards' block-explorer links on a
   * localnet or private validator (inside docker compose SOLANA_RPC_URL names a container). Unset:
   * SOLANA_RPC_URL, or the embedded localnet's URL.
   */
  PUBLIC_RPC_URL: optional(url(['http:', 'https:'])),
  /** Port of the embedded localnet's JSON-RPC; its WebSocket listens on the next port. */
  LOCALNET_PORT: port.default(8899),
  /**
   * 32 bytes (64 hex characters, or base64) sealing every custodial wallet secret (AES-256-GCM).
   * Unset outside production: a development key is generated into DATA_DIR/wallet-master.key.
   */
  WALLET_MASTER_KEY: optional(z.string().trim()),
  /** An outbox transaction still not found on chain this long after signing is reconciled `missing`. */
  RECONCILE_MISSING_AFTER_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(0, { message: 'expected milliseconds >= 0' })
    .default(120_000),
  /**
   * The UTC hour (0-23) at which the indexer role compares every followed token account's ledger
   * balance with the chain (src/app/indexer/balance-check.ts), once a day. The first run is at the
   * next such hour after the process starts, never at start.
   * @defaultValue 3
   */
  BALANCE_CHECK_HOUR_UTC: z.coerce
    .number({ message: 'expected an hour from 0 to 23' })
    .int({ message: 'expected a whole hour from 0 to 23' })
    .min(0, { message: 'expected an hour from 0 to 23' })
    .max(23, { message: 'expected an hour from 0 to 23' })
    .default(3),
  /** How long a money-moving request waits for the cluster to execute its payment before answering 202 pending. */
  WRITE_TIMEOUT_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(0, { message: 'expected milliseconds >= 0' })
    .default(10_000),
  /**
   * Longest a stop (Ctrl-C, SIGTERM) may take, from the first signal: past it the process names
   * the steps still running and exits 1. A payment or creator-fund job in hand normally finishes
   * within seconds; keep an orchestrator's grace period (Kubernetes' terminationGracePeriodSeconds)
   * longer than this plus SHUTDOWN_DRAIN_MS.
   * @defaultValue 30000
   */
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(1, { message: 'expected milliseconds >= 1' })
    .default(30_000),
  /**
   * After the first signal, how long the API keeps serving while `/healthz` already answers 503
   * `draining`, before it stops accepting connections: time for a load balancer to notice and send
   * no more. 0 (default): stop accepting at once. Counted within SHUTDOWN_TIMEOUT_MS.
   * @defaultValue 0
   */
  SHUTDOWN_DRAIN_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(0, { message: 'expected milliseconds >= 0' })
    .default(0),
  /**
   * Worker threads of the worker role that settle payments (the payments queue's BullMQ Workers,
   * each thread with its own event loop, Postgres pool and status poller). 1 (default): settling
   * runs beside the API's event loop instead of on it, so paid writes do not take the reads' time;
   * 0: on the process's main event loop, as a role-per-process deployment may prefer.
   * @defaultValue 1
   */
  PAYMENT_THREADS: z.coerce
    .number({ message: 'expected a whole number' })
    .int({ message: 'expected a whole number' })
    .min(0, { message: 'expected 0 or more' })
    .max(16, { message: 'expected at most 16' })
    .default(1),
  /**
   * How long the paying requests' payments gather before they go to the workers as one job. Each
   * job costs the queue and the worker a fixed set of round trips (Redis, Postgres, the RPC) however
   * many payments it carries, so a longer gathering makes a paid write cheaper and its answer later
   * by up to this much. 0: every payment its own job.
   * @defaultValue 20
   */
  PAYMENT_HANDOFF_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(0, { message: 'expected milliseconds >= 0' })
    .max(1_000, { message: 'expected at most 1000 ms' })
    .default(20),
  /**
   * How long a cached read (a feed page, a GraphQL feed query) may be served without a change
   * signal; every write empties the caches at once, so this only bounds a lost signal. 0 turns the
   * read caches off.
   */
  READ_CACHE_TTL_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(0, { message: 'expected milliseconds >= 0' })
    .default(1_000),
  /** Scales every API rate limit (2 doubles them); 0 turns limiting off, for load tests. */
  RATE_LIMIT_MULTIPLIER: z.coerce
    .number({ message: 'expected a number >= 0' })
    .min(0, { message: 'expected a number >= 0' })
    .default(1),
  /**
   * How many reverse proxies of ours stand in front of the API. The client IP (what per-IP limits
   * such as sign-up count) is the X-Forwarded-For entry that many hops from the right; entries
   * further left are whatever the client wrote. 0: X-Forwarded-* is ignored and the client is the
   * socket's peer, so a client cannot pick its own address (or protocol and host) by sending a
   * header.
   */
  TRUST_PROXY_HOPS: z.coerce
    .number({ message: 'expected a whole number of proxies >= 0' })
    .int({ message: 'expected a whole number of proxies >= 0' })
    .min(0, { message: 'expected a whole number of proxies >= 0' })
    .default(0),
  /**
   * Native tokens (base units, 9 decimals) the creator fund pays per epoch, split among authors by
   * engagement. Default 1,000 tokens. A fund holding less pays what it has.
   */
  CREATOR_FUND_EPOCH_BUDGET: z
    .string()
    .trim()
    .regex(/^\d{1,19}$/, { message: 'expected native base units: an integer of at most 19 digits' })
    .default('1000000000000')
    .transform((value) => BigInt(value)),
  /** false: no scheduled creator-fund epochs (`npm run cli -- fund-epoch run` still pays one on demand). */
  CREATOR_FUND_ENABLED: z
    .enum(['true', 'false'], { message: 'expected true or false' })
    .default('true')
    .transform((value) => value === 'true'),
  /** Length of a creator-fund epoch in milliseconds (epochs are aligned to the Unix epoch). */
  CREATOR_FUND_EPOCH_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(1_000, { message: 'expected at least 1000 ms' })
    .default(3_600_000),
  /**
   * USDC mint. Unset: the mainnet address on the embedded localnet (our own test USDC placed
   * there), Circle's devnet USDC on devnet, a mint of our own on a validator we run.
   */
  USDC_MINT: optional(base58Address),
  /** The native token's mint. Unset: a mint the bootstrap creates (and records) on first start. */
  NATIVE_MINT: optional(base58Address),
  /**
   * Webhooks to `http://` on a loopback address (a developer's own receiver). Unset: allowed
   * outside production, refused in production (where every URL must be https to a public address).
   */
  WEBHOOK_ALLOW_LOOPBACK: optional(
    z.enum(['true', 'false'], { message: 'expected true or false' }).transform((value) => value === 'true'),
  ),
  /** How long a failing event is retried before its endpoint is disabled (3 days). */
  WEBHOOK_RETRY_WINDOW_MS: z.coerce
    .number({ message: 'expected milliseconds' })
    .int({ message: 'expected whole milliseconds' })
    .min(1_000, { message: 'expected at least 1000 ms' })
    .default(259_200_000),
  /** Days the account event log (and the webhook delivery log) keeps an event. */
  EVENT_RETENTION_DAYS: z.coerce
    .number({ message: 'expected days' })
    .int({ message: 'expected whole days' })
    .min(30, { message: 'expected at least 30 days' })
    .default(30),
});

export type Env = z.infer<typeof envSchema>;

/**
 * What no one variable can say: half a key pair, or S3 settings without a bucket, is a mistake to
 * stop at rather than to guess past (src/config/config.ts runs it after the schema).
 */
export function crossCheckEnv(env: Env, ctx: z.RefinementCtx): void {
  const keyId = env.REPORT_S3_ACCESS_KEY_ID !== undefined;
  if (keyId !== (env.REPORT_S3_SECRET_ACCESS_KEY !== undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [keyId ? 'REPORT_S3_SECRET_ACCESS_KEY' : 'REPORT_S3_ACCESS_KEY_ID'],
      message: 'expected with its pair: REPORT_S3_ACCESS_KEY_ID and REPORT_S3_SECRET_ACCESS_KEY, or neither',
    });
  }
  if (env.REPORT_S3_BUCKET === undefined) {
    for (const name of ['REPORT_S3_ENDPOINT', 'REPORT_S3_ACCESS_KEY_ID', 'REPORT_S3_PREFIX'] as const) {
      if (env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'set without REPORT_S3_BUCKET' });
    }
  }
}
