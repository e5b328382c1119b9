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
      // A worker killed mid-job holds the job's lock until it expires: short locks (renewed every
      // 5 s while alive) and a frequent stall check hand it to another worker within ~15 s.
      // Settling is idempotent, so a stalled job may safely run again, as often as crashes happen.
      lock: { lockDuration: 10_000, stalledInterval: 5_000, maxStalledCount: 1_000 },
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
