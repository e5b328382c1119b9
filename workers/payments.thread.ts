import { parentPort, workerData } from 'node:worker_threads';
import { createDb } from '../src/adapters/postgres/index.js';
import { createRedis } from '../src/adapters/redis/index.js';
import { createLiveEvents } from '../src/adapters/redis/live-events.js';
import { localPaymentSignals, paymentSignalPublisher } from '../src/adapters/redis/payments-queue.js';
import { publishChange, type ChangeKey } from '../src/app/change-signals.js';
import { createCoreServices } from '../src/app/wiring-core.js';
import { paymentsProcessor } from './payments.processor.js';
import type { QueueThreadData, QueueThreadMessage } from './queue-thread.js';
import { startQueueWorkers } from './queue-workers.js';
import { nameThisThread } from '../src/module-thread.js';
import { parentLogger, serveUntilClosed } from './thread-host.js';

/*
 * A thread of the worker role that settles payments (PAYMENT_THREADS, started by queue-thread.ts):
 * the payments queue's BullMQ Workers with clients of their own (a Postgres pool, Redis, the RPC
 * and a status poller), as the main event loop would run them.
 */
const data = workerData as QueueThreadData;
nameThisThread(`lf-payments${data.index}`);
const { config } = data;
// Tagged with the thread's name by the parent, which logs each record again.
const logger = parentLogger(config);
const db = createDb(data.postgresUrl, { max: 10 });
const core = createCoreServices(config, logger, db, data.solanaUrl);
const publisher = createRedis(data.redisUrl, 'client');
// Publishes only: the read caches to tell live in the API's event loop (and in other processes),
// and the payment signals the paying requests wait for.
const liveEvents = createLiveEvents({ url: data.redisUrl, prefix: config.REDIS_PREFIX, publisher });
const changes = {
  changed: (...keys: ChangeKey[]) => {
    publishChange(liveEvents, keys).catch((err: unknown) =>
      logger.warn({ err }, 'read-cache change not published'),
    );
  },
};
// The cluster's pacing (and the platform's accounts, for a re-sign) as the parent has them.
await core.bootstrapChain();
const connection = createRedis(data.redisUrl, 'worker');
const workers = startQueueWorkers(
  paymentsProcessor({
    ...core,
    db,
    changes,
    // Signals for the requests of this process go to it as messages; others through Redis.
    signalPayment: localPaymentSignals(
      {
        origin: data.paymentsOrigin,
        deliver: (jobId, signal) => {
          const message: QueueThreadMessage = { type: 'payment-signal', jobId, signal };
          parentPort?.postMessage(message);
        },
      },
      paymentSignalPublisher(liveEvents),
    ),
  }),
  connection,
  config.REDIS_PREFIX,
  logger,
  `t${data.index}-`,
);

serveUntilClosed(logger, async () => {
  // Each Worker's close() stops fetching and waits for the jobs in progress.
  await Promise.all(workers.map((worker) => worker.close()));
  connection.disconnect();
  core.watcher.close();
  await liveEvents.close();
  await Promise.allSettled([db.destroy(), publisher.quit()]);
});
