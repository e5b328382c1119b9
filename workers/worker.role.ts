import { Worker, type BackoffStrategy, type Processor } from 'bullmq';
import type { App } from '../src/app/app.js';
import { createRedis } from '../src/adapters/redis/index.js';
import { startEventShipper } from './event-shipper.loop.js';
import { startIdempotencyPurge } from './idempotency-purge.loop.js';
import { OUTBOX_SWEEP_MS, startOutboxSweeper } from './outbox-sweeper.loop.js';
import { startTrendingBuilder, TRENDING_REBUILD_MS } from './trending.loop.js';
import type { RunningRole } from './role.js';
import { untracked } from '../src/shutdown/shutdown-steps.js';

/** A BullMQ queue served by the worker role. */
export interface QueueProcessor {
  queue: string;
  /** Jobs in progress at once in this process, over all its fetchers. */
  concurrency: number;
  /**
   * BullMQ Workers serving the queue in this process (default 1), sharing `concurrency`. A Worker
   * fetches its jobs one Redis round trip after another, so under a steady stream of short-lived
   * hand-offs one fetch loop becomes a queue of its own: several fetch in parallel.
   */
  fetchers?: number;
  process: Processor;
  /** Serves the custom backoff type the queue's jobs name (BullMQ asks the Worker for it). */
  backoffStrategy?: BackoffStrategy;
  /** Lock and stall settings: how fast a job held by a crashed worker is picked up again. */
  lock?: { lockDuration: number; stalledInterval: number; maxStalledCount: number };
  /** Re-enqueues work a crash left unfinished; returns how many items it found. */
  resume?: () => Promise<number>;
}

/**
 * The worker role: BullMQ Workers for every registered queue (one each unless it asks for more
 * fetchers), sharing one command connection; BullMQ gives each its own blocking connection.
 * The write-path issues register their processors (payments, payouts, events) in `processors`.
 */
export async function startWorkerRole(app: App, processors: readonly QueueProcessor[]): Promise<RunningRole> {
  const log = app.logger.child({ role: 'worker' });
  const connection = createRedis(app.stack.redis.url, 'worker');
  const workersOf = new Map<string, Worker[]>();
  for (const p of processors) {
    const fetchers = p.fetchers ?? 1;
    const workers = Array.from({ length: fetchers }, (_, k) => {
      const worker = new Worker(p.queue, p.process, {
        // Shown as the job's processedBy (bull-board): which fetcher ran it.
        name: `${p.queue}-${k + 1}`,
        connection,
        prefix: app.config.REDIS_PREFIX,
        concurrency: Math.ceil(p.concurrency / fetchers),
        ...(p.backoffStrategy ? { settings: { backoffStrategy: p.backoffStrategy } } : {}),
        ...p.lock,
      });
      worker.on('failed', (job, error) =>
        log.warn({ queue: p.queue, jobId: job?.id, err: error }, 'job failed'),
      );
      worker.on('error', (error) => log.error({ queue: p.queue, err: error }, 'worker error'));
      return worker;
    });
    workersOf.set(p.queue, [...(workersOf.get(p.queue) ?? []), ...workers]);
  }
  for (const p of processors) {
    const resumed = (await p.resume?.()) ?? 0;
    if (resumed > 0) log.info(`${p.queue}: resumed ${resumed} unfinished item(s) from before the last stop`);
  }
  const shipper = startEventShipper(app);
  const trending = startTrendingBuilder(app);
  const sweeper = startOutboxSweeper(app);
  const purge = startIdempotencyPurge(app);
  return {
    name: 'worker',
    summary: [
      ...processors.map(
        (p) =>
          `queue ${p.queue} (concurrency ${p.concurrency}${p.fetchers ? `, ${p.fetchers} fetchers` : ''})`,
      ),
      'event shipper: domain events and ledger legs to ClickHouse',
      `trending snapshot: rebuilt every ${TRENDING_REBUILD_MS / 1000} s`,
      `outbox sweeper: unfinished payments back to the queue every ${OUTBOX_SWEEP_MS / 1000} s`,
    ],
    stop: async (run = untracked) => {
      // Everything at once: the loops finish the round in hand, and each Worker's close() stops
      // fetching and waits for the jobs in progress (a SIGTERM never cuts a payment in half).
      // The clients they use (app.close) close only after this resolves.
      const stopped = await Promise.allSettled([
        run('worker: event shipper', () => shipper.stop()),
        run('worker: trending snapshot', () => trending.stop()),
        run('worker: outbox sweeper', () => sweeper.stop()),
        run('worker: idempotency purge', () => purge.stop()),
        ...[...workersOf].map(([queue, workers]) =>
          run(`worker: ${queue} jobs in hand`, () => Promise.all(workers.map((w) => w.close()))),
        ),
      ]);
      connection.disconnect();
      const failed = stopped.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
