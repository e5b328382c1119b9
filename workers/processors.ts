import {
  CREATOR_FUND_QUEUE,
  scheduleCreatorFundEpochs,
  unscheduleCreatorFundEpochs,
} from '../src/adapters/redis/creator-fund-queue.js';
import { localPaymentSignals, paymentSignalPublisher } from '../src/adapters/redis/payments-queue.js';
import type { App } from '../src/app/wiring.js';
import { runDueEpochs } from '../src/app/creator-fund/run-epoch.js';
import { paymentsProcessor } from './payments.processor.js';
import { reportsProcessor } from './reports.processor.js';
import type { QueueProcessor } from './worker.role.js';

/** Every queue the worker role serves. */
export function processorsFor(app: App): QueueProcessor[] {
  return [
    {
      ...paymentsProcessor({
        ...app,
        signalPayment: localPaymentSignals(app.payments, paymentSignalPublisher(app.liveEvents)),
      }),
      // Settling in threads of its own (payments.thread.ts builds the same processor there), so
      // that a paid write's BullMQ round trips, signing and status polls leave the API's event loop
      // to the reads; PAYMENT_THREADS=0 keeps them here.
      thread: { count: app.config.PAYMENT_THREADS, baseUrl: import.meta.url, module: 'payments.thread' },
    },
    {
      queue: CREATOR_FUND_QUEUE,
      // Epochs are planned one at a time (planning also holds a Postgres advisory lock).
      concurrency: 1,
      // Plans every ended, unpaid epoch and hands its batches to the payments queue above.
      process: async () => {
        const plans = await runDueEpochs(app);
        return plans
          .filter((plan) => !plan.alreadyPlanned)
          .map((plan) => ({ epoch: plan.epochStart.toISOString(), outcome: plan.outcome }));
      },
      // (Re-)registers the repeatable job on start: one schedule however many workers run.
      resume: async () => {
        if (app.config.CREATOR_FUND_ENABLED) {
          await scheduleCreatorFundEpochs(
            app.stack.redis.url,
            app.config.REDIS_PREFIX,
            app.config.CREATOR_FUND_EPOCH_MS,
          );
        } else {
          await unscheduleCreatorFundEpochs(app.stack.redis.url, app.config.REDIS_PREFIX);
        }
        return 0;
      },
    },
    reportsProcessor(app),
  ];
}
