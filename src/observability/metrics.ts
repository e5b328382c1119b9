import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HealthReport } from '../domain/health/health.service.js';
import { FoldedCounter } from './folded-counter.js';

export interface Metrics {
  registry: Registry;
  httpRequests: Histogram<'method' | 'route' | 'status'>;
  /**
   * Of those, the requests answered from the read caches before Fastify (src/api/cached-reads/): how
   * much of the read traffic the cheap path carries.
   */
  cachedReads: FoldedCounter<'route'>;
  dependencyUp: Gauge<'dependency'>;
  dependencyLatency: Gauge<'dependency'>;
  healthChecks: Counter<'status'>;
  /** Age of the oldest domain event or ledger leg not yet in ClickHouse (0 when none wait). */
  shipperLagSeconds: Gauge<'stream'>;
  shippedRows: Counter<'stream'>;
  shipperFailures: Counter;
  /** Age of the oldest outbox transaction not reconciled at `confirmed` yet (0 when none wait). */
  reconciliationLagSeconds: Gauge;
  reconciliations: Counter<'status' | 'commitment'>;
  rpcErrors: Counter<'kind'>;
  /** The block follower (src/app/indexer/block-follower.ts): slots its cursor is behind, by commitment. */
  followerSlotLag: Gauge<'commitment'>;
  followerBlocks: Counter;
  /** HTTP requests the block follower sent to the RPC node (a batch is one). */
  followerRpcRequests: Counter;
  followedAccounts: Gauge;
  /** Deposit movements by stage: `credited` (confirmed, held), `finalized` (spendable), `reversed` (fork). */
  followerDeposits: Counter<'stage'>;
  followerForks: Counter;
  /** Per-address sweeps: `start` (no cursor yet, wallets exist) or `pruned` (history gone past the cursor). */
  followerSweeps: Counter<'reason'>;
  /** The daily balance check (src/app/indexer/balance-check.ts): mismatches its last run raised. */
  balanceCheckMismatches: Gauge;
  /** When the last balance check finished (Unix seconds): an alert can ask that it is under ~26 h old. */
  balanceCheckLastRun: Gauge;
  /** Creator-fund epochs planned, by outcome (planned, no_engagement, unfunded). */
  creatorFundEpochs: Counter<'outcome'>;
  /** Epochs the fund could not pay in full: `empty` (nothing paid) or `short` (part of the budget). */
  creatorFundUnderfunded: Counter<'kind'>;
  /** Native tokens planned for payout (whole tokens, a float: a metric, never money). */
  creatorFundPaidTokens: Counter;
  /** What the fund could pay at the last planning (whole tokens). */
  creatorFundAvailableTokens: Gauge;
  /**
   * Event-log followers running in this process (`followEvents`: REST GET /events/stream and
   * GraphQL `events` subscriptions): up when one starts reading, down when it ends, whatever ends it.
   */
  eventStreamFollowers: Gauge;
  /** Webhook delivery attempts, by outcome (WEBHOOK_ATTEMPT_OUTCOMES). */
  webhookAttempts: Counter<'outcome'>;
  /**
   * Reports the webhook endpoints by state (`ledgerfeed_webhook_endpoints{state}`) and the age of
   * the oldest event an enabled endpoint still waits for (`ledgerfeed_webhook_oldest_undelivered_seconds`),
   * read on scrape, at most once per WEBHOOK_BACKLOG_CACHE_MS (one Postgres read for both).
   */
  watchWebhooks(read: () => Promise<WebhookBacklog>): void;
  recordHealth(report: HealthReport): void;
  /**
   * Reports a BullMQ queue's jobs by state as `ledgerfeed_queue_jobs{queue,state}`, counted at
   * each scrape (one Redis round trip); a count that fails leaves the state out of that scrape.
   */
  watchQueue(name: string, counts: () => Promise<Record<string, number>>): void;
}

/** The job states a scrape reports, as BullMQ names them. */
export const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'failed',
  'completed',
  'prioritized',
  'waiting-children',
] as const;

/** How webhook attempts end, as `ledgerfeed_webhook_attempts_total{outcome}` counts them. */
export const WEBHOOK_ATTEMPT_OUTCOMES = ['delivered', 'failed', 'timeout', 'refused'] as const;
/** The webhook endpoint states the gauge reports (the endpoint model's). */
export const WEBHOOK_ENDPOINT_STATES = ['enabled', 'disabled'] as const;
/** A scrape reads the webhook backlog from Postgres at most this often; others reuse it. */
export const WEBHOOK_BACKLOG_CACHE_MS = 5_000;

export interface WebhookBacklog {
  /** Endpoints by state. */
  endpoints: Record<string, number>;
  /** Age of the oldest event an enabled endpoint has not been delivered yet; 0 when none waits. */
  oldestUndeliveredSeconds: number;
}

/** A registry per process (not prom-client's global one) so tests can build several servers. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ledgerfeed_' });
  const httpRequests = new Histogram({
    name: 'ledgerfeed_http_request_duration_seconds',
    help: 'HTTP request duration by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const cachedReads = new FoldedCounter({
    name: 'ledgerfeed_cached_reads_total',
    help: 'Requests answered from the read caches before Fastify, by route template',
    labelName: 'route',
    registers: [registry],
  });
  const dependencyUp = new Gauge({
    name: 'ledgerfeed_dependency_up',
    help: '1 when the last health probe of the dependency succeeded, else 0',
    labelNames: ['dependency'] as const,
    registers: [registry],
  });
  const dependencyLatency = new Gauge({
    name: 'ledgerfeed_dependency_latency_seconds',
    help: 'Round-trip of the last health probe of the dependency',
    labelNames: ['dependency'] as const,
    registers: [registry],
  });
  const healthChecks = new Counter({
    name: 'ledgerfeed_health_checks_total',
    help: 'Health checks run, by overall result',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const shipperLagSeconds = new Gauge({
    name: 'ledgerfeed_shipper_lag_seconds',
    help: 'Age of the oldest row waiting in Postgres to be shipped to ClickHouse, by stream',
    labelNames: ['stream'] as const,
    registers: [registry],
  });
  const shippedRows = new Counter({
    name: 'ledgerfeed_shipped_rows_total',
    help: 'Rows shipped from Postgres to ClickHouse, by stream (events, legs)',
    labelNames: ['stream'] as const,
    registers: [registry],
  });
  const shipperFailures = new Counter({
    name: 'ledgerfeed_shipper_failures_total',
    help: 'Shipping batches that failed (ClickHouse down, ...); their rows wait in Postgres',
    registers: [registry],
  });
  const reconciliationLagSeconds = new Gauge({
    name: 'ledgerfeed_reconciliation_lag_seconds',
    help: 'Age of the oldest outbox transaction not yet reconciled at confirmed',
    registers: [registry],
  });
  const reconciliations = new Counter({
    name: 'ledgerfeed_reconciliations_total',
    help: 'Reconciliation verdicts recorded, by status and commitment (exceptions are every status but matched)',
    labelNames: ['status', 'commitment'] as const,
    registers: [registry],
  });
  const rpcErrors = new Counter({
    name: 'ledgerfeed_indexer_rpc_errors_total',
    help: 'RPC failures the indexer met, by ChainError kind',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const followerSlotLag = new Gauge({
    name: 'ledgerfeed_block_follower_slot_lag',
    help: 'Slots between the block follower cursor and the chain, by commitment (confirmed, finalized)',
    labelNames: ['commitment'] as const,
    registers: [registry],
  });
  const followerBlocks = new Counter({
    name: 'ledgerfeed_block_follower_blocks_total',
    help: 'Blocks the block follower read and passed',
    registers: [registry],
  });
  const followerRpcRequests = new Counter({
    name: 'ledgerfeed_block_follower_rpc_requests_total',
    help: 'HTTP requests the block follower sent to the RPC node (a JSON-RPC batch counts once)',
    registers: [registry],
  });
  const followedAccounts = new Gauge({
    name: 'ledgerfeed_block_follower_followed_accounts',
    help: 'Token accounts the block follower matches blocks against',
    registers: [registry],
  });
  const followerDeposits = new Counter({
    name: 'ledgerfeed_block_follower_deposits_total',
    help: 'Deposit movements by stage: credited (confirmed, held), finalized (spendable), reversed (fork)',
    labelNames: ['stage'] as const,
    registers: [registry],
  });
  const followerForks = new Counter({
    name: 'ledgerfeed_block_follower_forks_total',
    help: 'Followed blocks dropped because the chain forked away from them',
    registers: [registry],
  });
  const followerSweeps = new Counter({
    name: 'ledgerfeed_block_follower_sweeps_total',
    help: 'Per-address sweeps run by the block follower, by reason (start, pruned)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const balanceCheckMismatches = new Gauge({
    name: 'ledgerfeed_balance_check_mismatches',
    help: 'Token accounts whose ledger balance differed from the chain in the last daily balance check',
    registers: [registry],
  });
  const balanceCheckLastRun = new Gauge({
    name: 'ledgerfeed_balance_check_last_run_timestamp_seconds',
    help: 'When the last daily balance check finished (Unix time, seconds)',
    registers: [registry],
  });
  const creatorFundEpochs = new Counter({
    name: 'ledgerfeed_creator_fund_epochs_total',
    help: 'Creator-fund epochs planned, by outcome (planned, no_engagement, unfunded)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const creatorFundUnderfunded = new Counter({
    name: 'ledgerfeed_creator_fund_underfunded_epochs_total',
    help: 'Creator-fund epochs the fund could not pay in full: kind empty (nothing paid) or short (part of the budget)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const creatorFundPaidTokens = new Counter({
    name: 'ledgerfeed_creator_fund_paid_tokens_total',
    help: 'Native tokens planned for payout by the creator fund (whole tokens)',
    registers: [registry],
  });
  const creatorFundAvailableTokens = new Gauge({
    name: 'ledgerfeed_creator_fund_available_tokens',
    help: 'Native tokens the creator fund could pay at its last epoch planning',
    registers: [registry],
  });
  const eventStreamFollowers = new Gauge({
    name: 'ledgerfeed_event_stream_followers',
    help: 'Event-log followers running in this process (REST event streams and GraphQL events subscriptions)',
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'ledgerfeed_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome (delivered, failed: another status or no connection, timeout, refused: the address check)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of WEBHOOK_ATTEMPT_OUTCOMES) webhookAttempts.inc({ outcome }, 0);
  let webhookBacklogRead: (() => Promise<WebhookBacklog>) | undefined;
  let webhookBacklog: { at: number; value: Promise<WebhookBacklog | undefined> } | undefined;
  const readWebhookBacklog = () => {
    if (!webhookBacklogRead) return Promise.resolve(undefined);
    const now = Date.now();
    if (!webhookBacklog || now - webhookBacklog.at >= WEBHOOK_BACKLOG_CACHE_MS) {
      // A failed read leaves the gauges out of that scrape (as a failed queue count does).
      webhookBacklog = { at: now, value: webhookBacklogRead().catch(() => undefined) };
    }
    return webhookBacklog.value;
  };
  new Gauge({
    name: 'ledgerfeed_webhook_endpoints',
    help: 'Webhook endpoints by state (enabled, disabled), read at scrape time',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const backlog = await readWebhookBacklog();
      if (!backlog) return;
      for (const state of WEBHOOK_ENDPOINT_STATES) this.set({ state }, backlog.endpoints[state] ?? 0);
    },
  });
  new Gauge({
    name: 'ledgerfeed_webhook_oldest_undelivered_seconds',
    help: 'Age of the oldest event an enabled webhook endpoint has not received yet (0 when none waits)',
    registers: [registry],
    async collect() {
      this.reset();
      const backlog = await readWebhookBacklog();
      if (backlog) this.set(backlog.oldestUndeliveredSeconds);
    },
  });
  const watchedQueues = new Map<string, () => Promise<Record<string, number>>>();
  new Gauge({
    name: 'ledgerfeed_queue_jobs',
    help: 'BullMQ jobs by queue and state, counted at scrape time',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      await Promise.all(
        [...watchedQueues].map(async ([queue, counts]) => {
          const byState = await counts().catch(() => undefined);
          if (!byState) return;
          for (const state of QUEUE_STATES) this.set({ queue, state }, byState[state] ?? 0);
        }),
      );
    },
  });
  return {
    registry,
    watchQueue: (name, counts) => {
      watchedQueues.set(name, counts);
    },
    webhookAttempts,
    watchWebhooks: (read) => {
      webhookBacklogRead = read;
      webhookBacklog = undefined;
    },
    creatorFundEpochs,
    creatorFundUnderfunded,
    creatorFundPaidTokens,
    creatorFundAvailableTokens,
    eventStreamFollowers,
    shipperLagSeconds,
    shippedRows,
    shipperFailures,
    reconciliationLagSeconds,
    reconciliations,
    rpcErrors,
    followerSlotLag,
    followerBlocks,
    followerRpcRequests,
    followedAccounts,
    followerDeposits,
    followerForks,
    followerSweeps,
    balanceCheckMismatches,
    balanceCheckLastRun,
    httpRequests,
    cachedReads,
    dependencyUp,
    dependencyLatency,
    healthChecks,
    recordHealth: (report) => {
      healthChecks.inc({ status: report.status });
      for (const d of report.dependencies) {
        if (d.status === 'not_configured') continue;
        dependencyUp.set({ dependency: d.name }, d.status === 'up' ? 1 : 0);
        dependencyLatency.set({ dependency: d.name }, d.latencyMs / 1000);
      }
    },
  };
}
