import { PAYMENTS_QUEUE, type PaymentJob } from '../src/adapters/redis/payments-queue.js';
import type { App } from '../src/app/app.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import type { QueueProcessor } from './worker.role.js';

/** Every queue the worker role serves. */
export function processorsFor(app: App): QueueProcessor[] {
  return [
    {
      queue: PAYMENTS_QUEUE,
      // Settling is mostly waiting on the chain: many in flight per worker process.
      concurrency: 64,
      process: (job) => settlePayment(app, (job.data as PaymentJob).chainTransactionId),
      /** Unfinished outbox rows (a crash, a restart): enqueued again; job ids dedupe the live ones. */
      resume: async () => {
        const rows = await app.db
          .selectFrom('chain_transactions')
          .select('id')
          .where('status', '=', 'signed')
          .execute();
        for (const row of rows) await app.payments.enqueue(row.id);
        return rows.length;
      },
    },
  ];
}
