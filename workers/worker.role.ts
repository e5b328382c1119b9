import type { Worker } from 'bullmq';
import type { App } from '../src/app/wiring.js';
import { createRedis } from '../src/adapters/redis/index.js';
import { startEventRetention } from './event-retention.loop.js';
import { EVENT_SEQUENCE_MS, startEventSequencer } from './event-sequencer.loop.js';
import { startEventShipper } from './event-shipper.loop.js';
import { FINALITY_FOLLOW_MS, startFinalityFollower } from './finality-follower.loop.js';
import { startIdempotencyPurge } from './idempotency-purge.loop.js';
import { OUTBOX_SWEEP_MS, startOutboxSweeper } from './outbox-sweeper.loop.js';
import { startQueueThread, type QueueThread } from './queue-thread.js';
import { REPORT_RESUME_MS, startReportResume } from './report-resume.loop.js';
import { startQueueWorkers, type QueueProcessor } from './queue-workers.js';
import { startTrendingBuilder, TRENDING_REBUILD_MS } from './trending.loop.js';
import { DISPATCH_POLL_MS, startWebhookDispatcherLoop } from './webhook-dispatcher.loop.js';
import type { RunningRole } from './role.js';
import { untracked } from '../src/shutdown/shutdown-steps.js';

export type { QueueProcessor } from './queue-workers.js';

/**
 * The worker role: BullMQ Workers for every registered queue (one each unless it asks for more
 * fetchers), sharing one command connection; BullMQ gives each its own blocking connection. A queue
 * that asks for threads (`thread.count` > 0: payments, PAYMENT_THREADS) is served from worker
 * threads instead (queue-thread.ts), each with clients of its own, and stopped in the same step.
 * The write-path issues register their processors (payments, payouts, events) in `processors`.
 */
export async function startWorkerRole(app: App, processors: readonly QueueProcessor[]): Promise<RunningRole> {
  const log = app.logger.child({ role: 'worker' });
  const connection = createRedis(app.stack.redis.url, 'worker');
  const workersOf = new Map<string, Worker[]>();
  const threads: QueueThread[] = [];
  for (const p of processors) {
    if (p.thread && p.thread.count > 0) {
      for (let index = 1; index <= p.thread.count; index++) {
        threads.push(await startQueueThread(app, p, index, log));
      }
      continue;
    }
    const workers = startQueueWorkers(p, connection, app.config.REDIS_PREFIX, log);
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
  const finality = startFinalityFollower(app);
  const webhooks = startWebhookDispatcherLoop(app);
  // Numbered events wake this process's dispatcher at once (others find them on their poll).
  const sequencer = startEventSequencer(app, () => webhooks.wake());
  const retention = startEventRetention(app);
  const reportResume = startReportResume(app);
  return {
    name: 'worker',
    summary: [
      ...processors.map(
        (p) =>
          `queue ${p.queue} (concurrency ${p.concurrency}${p.fetchers ? `, ${p.fetchers} fetchers` : ''}` +
          `${p.thread?.count ? `, in ${p.thread.count} thread(s) of its own` : ''})`,
      ),
      'event shipper: domain events and ledger legs to ClickHouse',
      `trending snapshot: rebuilt every ${TRENDING_REBUILD_MS / 1000} s`,
      `outbox sweeper: unfinished payments back to the queue every ${OUTBOX_SWEEP_MS / 1000} s`,
      `finality follower: confirmed payments followed to finalized (or sent again) every ${FINALITY_FOLLOW_MS / 1000} s`,
      `webhook dispatcher: each endpoint's events in order, due endpoints looked for every ${DISPATCH_POLL_MS} ms`,
      `event sequencer: staged account events numbered into each account's log every ${EVENT_SEQUENCE_MS} ms`,
      `report resume: report runs that lost their job queued again every ${REPORT_RESUME_MS / 1000} s`,
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
        run('worker: finality follower', () => finality.stop()),
        run('worker: webhook deliveries in flight', () => webhooks.stop()),
        run('worker: event sequencer', () => sequencer.stop()),
        run('worker: event retention', () => retention.stop()),
        run('worker: report resume', () => reportResume.stop()),
        ...[...workersOf].map(([queue, workers]) =>
          run(`worker: ${queue} jobs in hand`, () => Promise.all(workers.map((w) => w.close()))),
        ),
        ...threads.map((thread) => run(`worker: ${thread.name} jobs in hand`, () => thread.stop())),
      ]);
      connection.disconnect();
      const failed = stopped.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
