import { Worker, type BackoffStrategy, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

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
  /**
   * Serve the queue from `count` worker threads instead of this event loop (workers/queue-thread.ts):
   * `module` (beside `baseUrl`) builds the same processor there from the process's settings.
   */
  thread?: { count: number; baseUrl: string; module: string };
}

/** The BullMQ Workers of one queue (one per fetcher), sharing `connection` for their commands. */
export function startQueueWorkers(
  p: QueueProcessor,
  connection: Redis,
  prefix: string,
  log: Logger,
  namePrefix = '',
): Worker[] {
  const fetchers = p.fetchers ?? 1;
  return Array.from({ length: fetchers }, (_, k) => {
    const worker = new Worker(p.queue, p.process, {
      // Shown as the job's processedBy (bull-board): which fetcher ran it.
      name: `${p.queue}-${namePrefix}${k + 1}`,
      connection,
      prefix,
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
}
